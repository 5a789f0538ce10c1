"""A sync: phase 1 (`indexer`, each file through `prepare`) and phase 2 (`vector_pass`),
counted on one tally (`sync_tally`)."""
