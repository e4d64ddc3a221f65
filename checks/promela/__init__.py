"""The spec exported to Promela for SPIN: terms that print as Promela, the model, running SPIN."""
