// Placeholder: replaced by the AppStore implementation.
