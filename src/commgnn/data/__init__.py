"""Dataset sources (synthetic, RMAT, Planetoid, OGB, Reddit) and the common on-disk store."""
