"""The sans-IO controllers: each a pure function of (world, key, context) returning a Result."""
