"""What leaves the product as files: the replication package (`dataset`, its spec section
`dataset_spec`) and a report's exports (`exports`: CSV zip and HTML, the database step before
`metrics.render`)."""
