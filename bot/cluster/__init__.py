"""Several daemons sharing one troupe (PostgreSQL only): placement, companions, the roster."""

__all__: list[str] = []
