// The store-level group-commit benchmark; being written (see the store issue).
