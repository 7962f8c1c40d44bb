"""Reading uploaded zips safely: one helper for every zip that comes from outside (the image import's
archive, the campaign archive import).

Every way a zip can be bad becomes a `ZipMemberError` (an ApplicationError, so a 400) that names
the member: not a zip at all, a member missing, larger than the caller's limit (whatever its header
claims: reads stop at the limit), a CRC that does not match (the zip module only notices when the
member is read to its end), an encrypted member, an unsupported or broken compression stream.
`problems()` lists unsafe member paths (absolute, drive letters, backslashes, `..`: zip slip) and an
uncompressed total over a limit, before anything is read.
"""
from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO, Any

from .errors import ApplicationError
from .inputs import brief


class ZipMemberError(ApplicationError):
    """A zip, or one of its members, that cannot be read; `member` names it ("" for the whole zip)."""

    def __init__(self, message: str, *, member: str = "", field: str = "archive"):
        super().__init__(message, errors={field: [message]})
        self.member = member


def path_is_safe(name: str) -> bool:
    """No absolute paths, drive letters, backslashes, NUL or `..` components (zip slip)."""
    if not name or name.startswith(("/", "\\")) or "\\" in name or "\x00" in name:
        return False
    parts = PurePosixPath(name).parts
    return bool(parts) and ".." not in parts and ":" not in parts[0]


def _damage_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError]
    try:
        import lzma

        errors.append(lzma.LZMAError)
    except ImportError:  # pragma: no cover
        pass
    return tuple(errors)


_DAMAGE_ERRORS = _damage_errors()


RATIO_FLOOR = 1024 * 1024  # members smaller than this are never refused for their compression ratio


class SafeZip:
    """A zip from outside. `source`: bytes, a path, or a binary file object."""

    def __init__(self, source: bytes | str | Path | IO[bytes], *, field: str = "archive"):
        self.field = field
        handle: Any = io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source
        try:
            self.zip = zipfile.ZipFile(handle)
            infos = self.zip.infolist()
        except (zipfile.LargeZipFile, NotImplementedError) as exc:
            raise ZipMemberError(f"not a zip file ({brief(str(exc), 120)[1:-1]})", field=field) from None
        except _DAMAGE_ERRORS as exc:
            raise ZipMemberError(f"not a zip file ({brief(str(exc), 120)[1:-1]})", field=field) from None
        self.members = {info.filename: info for info in infos if not info.is_dir()}

    def __enter__(self) -> SafeZip:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.zip.close()

    def names(self) -> list[str]:
        return list(self.members)

    def exists(self, name: str) -> bool:
        return name in self.members

    def size(self, name: str) -> int:
        """The uncompressed size the member's header announces (reads never go past the caller's limit)."""
        return self.members[name].file_size

    def problems(self, *, max_total: int | None = None, max_member: int | None = None,
                 max_ratio: float | None = None) -> list[str]:
        """Unsafe paths; with the limits, an uncompressed total or a member over its limit, and a member
        whose header announces more than `max_ratio` times its compressed size (a zip bomb: deflate
        reaches ~1000:1 on repeated bytes; real JSON Lines and images stay far below 100:1). Reads
        never go past these limits whatever a header claims (`read`, `lines`)."""
        out = [f"member {brief(name)} has an unsafe path (absolute or with '..')"
               for name in self.members if not path_is_safe(name)]
        total = sum(info.file_size for info in self.members.values())
        if max_total is not None and total > max_total:
            out.append(f"uncompressed size {total} bytes is over the limit of {max_total}")
        for name, info in self.members.items():
            if max_member is not None and info.file_size > max_member:
                out.append(f"member {brief(name)} is larger than {max_member} bytes uncompressed")
            elif max_ratio is not None and info.file_size > RATIO_FLOOR and \
                    info.file_size > max_ratio * max(info.compress_size, 1):
                out.append(f"member {brief(name)} expands {info.file_size // max(info.compress_size, 1)} times "
                           f"(over {max_ratio:g}): a zip bomb?")
        return out

    def _error(self, name: str, what: str) -> ZipMemberError:
        return ZipMemberError(f"member {brief(name)} {what}", member=name, field=self.field)

    def read(self, name: str, *, limit: int) -> bytes:
        """The member's bytes, checked to its end (CRC), at most `limit` of them."""
        info = self.members.get(name)
        if info is None:
            raise self._error(name, "is missing")
        if info.file_size > limit:
            raise self._error(name, f"is larger than {limit} bytes")
        try:
            with self.zip.open(info) as handle:
                data = handle.read(limit + 1)
                if len(data) > limit:
                    raise self._error(name, f"is larger than {limit} bytes")
                handle.read(1)  # to the end: the CRC is checked there
        except ZipMemberError:
            raise
        except RuntimeError as exc:  # zipfile: "File ... is encrypted, password required for extraction"
            raise self._error(name, "is encrypted: upload an unencrypted zip" if "encrypt" in str(exc)
                              else f"cannot be read ({brief(str(exc), 120)[1:-1]})") from None
        except NotImplementedError as exc:
            raise self._error(name, f"uses an unsupported compression ({brief(str(exc), 80)[1:-1]})") from None
        except _damage_errors() as exc:
            raise self._error(name, f"is damaged ({brief(str(exc), 120)[1:-1]})") from None
        return data

    def lines(self, name: str, *, limit: int, max_line: int) -> Iterator[bytes]:
        """The member's lines, streamed (never the whole member in memory): at most `limit` bytes in
        all and `max_line` per line, checked to the end (CRC). Problems are ZipMemberErrors."""
        info = self.members.get(name)
        if info is None:
            raise self._error(name, "is missing")
        if info.file_size > limit:
            raise self._error(name, f"is larger than {limit} bytes")
        total = 0
        try:
            with self.zip.open(info) as handle:
                while True:
                    line = handle.readline(max_line + 1)
                    if not line:
                        break
                    total += len(line)
                    if total > limit:
                        raise self._error(name, f"is larger than {limit} bytes")
                    if len(line) > max_line and not line.endswith(b"\n"):
                        raise self._error(name, f"has a line longer than {max_line} bytes")
                    yield line
        except ZipMemberError:
            raise
        except RuntimeError as exc:
            raise self._error(name, "is encrypted: upload an unencrypted zip" if "encrypt" in str(exc)
                              else f"cannot be read ({brief(str(exc), 120)[1:-1]})") from None
        except NotImplementedError as exc:
            raise self._error(name, f"uses an unsupported compression ({brief(str(exc), 80)[1:-1]})") from None
        except _damage_errors() as exc:
            raise self._error(name, f"is damaged ({brief(str(exc), 120)[1:-1]})") from None
