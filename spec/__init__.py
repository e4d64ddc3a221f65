"""The executable spec of the prefix-cache flight coordinator and the scheduler around it."""
