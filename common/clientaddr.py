def client_address(request) -> str: return request.META.get("REMOTE_ADDR", "") or ""
