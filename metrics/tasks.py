from celery import shared_task

from .compare.build import compare_build_snapshot
from .package.services import package_build_run
from .snapshots.report import report_build_snapshot


# Routed to the `default` queue (CELERY_TASK_DEFAULT_QUEUE).
@shared_task(name="metrics.report_build", acks_late=True, ignore_result=True)
def report_build_task(snapshot_id: int) -> None:
    report_build_snapshot(snapshot_id=snapshot_id)


@shared_task(name="metrics.compare_build", acks_late=True, ignore_result=True)
def compare_build_task(snapshot_id: int, campaign_ids: list[int], report_options: dict, compare_options: dict) -> None:
    """A comparison too large for a request (over REQUEST_WORK_BUDGET_S, common/budget.py); default queue."""
    compare_build_snapshot(snapshot_id=snapshot_id, campaign_ids=campaign_ids, report_options=report_options,
                           compare_options=compare_options)


@shared_task(name="metrics.package_build", acks_late=True, ignore_result=True)
def package_build_task(build_id: int) -> None:
    """The replication package (metrics/package/services.py); default queue."""
    package_build_run(build_id=build_id)
