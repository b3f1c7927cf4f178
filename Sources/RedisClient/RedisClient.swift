// Placeholder: replaced by the RedisClient implementation.
