from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sessions_app.services.audit_verify import audit_verify_record


class Command(BaseCommand):
    help = "Verify the audit log's hash chain; names the first row that does not fit."

    def handle(self, *args: Any, **options: Any) -> None:
        report, _ = audit_verify_record(actor="manage.py audit_verify")
        if not report.ok:
            raise CommandError(
                f"audit chain broken at event #{report.first_bad_seq} (id {report.first_bad_id}): "
                f"{report.problem}; {report.checked} events verified before it"
            )
        self.stdout.write(f"audit chain intact: {report.checked} events verified")
