from celery import shared_task

from .services import report_build_snapshot


# Routed to the `default` queue (CELERY_TASK_DEFAULT_QUEUE).
@shared_task(name="metrics.report_build", acks_late=True, ignore_result=True)
def report_build_task(snapshot_id: int) -> None:
    report_build_snapshot(snapshot_id=snapshot_id)
