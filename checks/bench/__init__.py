"""The seed's experiments as `flightcheck bench`."""
