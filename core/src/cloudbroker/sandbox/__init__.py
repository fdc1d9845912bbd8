"""A local sandbox of every installed cloud with an emulator: placements and failover offline.

``cloudbroker sandbox up`` starts a supervisor (:mod:`.supervisor`) that runs each cloud's
emulator selling its packaged catalog, an S3-compatible object store per cloud
(:mod:`.stores`), each cloud's instance metadata service with the instances' role
credentials (:mod:`.metadata`), and every emulated instance's user data as a local process
(:mod:`.instances`); :mod:`.env` is the environment that points cloudbroker at it, and
:mod:`.faults` the reclaims, outages and stock limits to rehearse.
"""
