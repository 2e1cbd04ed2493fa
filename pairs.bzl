"""The registered repro/fix pairs: each bug issue adds its two binaries here."""

PAIRS = []
