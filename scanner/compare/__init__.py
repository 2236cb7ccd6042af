"""A run against an earlier one: the comparison, the gate, the significance test, and the Report record that holds them."""
