"""The live driver: Phalanx as a secondary scheduler on a real cluster (`phalanx run`)."""
