"""A real MLX engine: paged KV cache, prefix caching, continuous batching and single-flight coordination."""
