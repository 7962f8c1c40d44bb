from rest_framework import pagination


class PageNumberPagination(pagination.PageNumberPagination):
    """`?page=N&page_size=M` (M up to 500)."""

    page_size_query_param = "page_size"
    max_page_size = 500
