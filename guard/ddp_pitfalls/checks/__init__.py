"""One module per pitfall: what it looks at, and why there."""
