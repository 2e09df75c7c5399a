"""The discrete-event simulator: drives the scheduling engine with a virtual clock."""
