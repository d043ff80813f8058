"""Stand-ins for the parts of the deployed world that tests and ``codap-relay local-api`` share."""
