// Placeholder: replaced by the HTTPClient implementation.
