"""The distributed runtime: starting workers (``launcher``), their liveness
(``heartbeat``), the device plan (``devices``), partitioned features and neighbour
sampling over RPC (``feature_store``, ``remote_sampler``), point-to-point exchange
(``p2p``) and background producers (``prefetch``)."""
