"""Snapshots: a built report (or comparison) kept in `ReportSnapshot` until the data changes; the
claim (one builder per key), the build in the request or by a worker, and the store."""
