"""The real engine checked against the spec: abstraction, trace validation, monitor, campaigns, replay."""
