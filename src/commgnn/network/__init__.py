"""The emulated network: every byte that would cross a machine boundary pays one
emulated cost (``netem``), per-machine links (``nic``) and congestion schedules
(``congestion``)."""
