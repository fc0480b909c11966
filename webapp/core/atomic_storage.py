"""The folder storage (FOLIO_STORAGE=filesystem): Django's, except that a file appears under
its name only once it is whole.

Django's ``FileSystemStorage`` opens the final name and writes into it, so a write that fails
half-way (the disk full) leaves a truncated or empty file there; for content-addressed
documents, that file then stood for the bytes of every later upload of them, and their pages
failed ("Cannot open empty stream"). Here each file is written under a temporary name in the
same folder, flushed to disk, then linked to its name (never overwriting: a taken name gets
Django's next available one, as before), or, for ``replace``, renamed over it. A failed write
removes its temporary file and leaves no name behind.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from typing import Any

from django.core.files.storage import FileSystemStorage
from django.core.files.utils import validate_file_name

TEMPORARY_PREFIX = ".incoming-"


class AtomicFileSystemStorage(FileSystemStorage):
    def _save(self, name: str, content: Any) -> str:
        # Django 5.1+ lets a storage allow overwriting (FileSystemStorage(allow_overwrite=)).
        return self._store(name, content, overwrite=getattr(self, "_allow_overwrite", False))

    def replace(self, name: str, content: Any) -> str:
        """Store ``content`` under exactly ``name``, replacing what is there in one rename
        (a reader sees the old file or the new one, never a part)."""
        validate_file_name(name, allow_relative_path=True)
        return self._store(name, content, overwrite=True)

    def _store(self, name: str, content: Any, *, overwrite: bool) -> str:
        full_path = self.path(name)
        directory = os.path.dirname(full_path)
        self._folder_made(directory)
        temporary = self._written(directory, content)
        try:
            while True:
                try:
                    self._placed(temporary, full_path, overwrite=overwrite)
                    break
                except FileExistsError:
                    name = self.get_available_name(name)
                    full_path = self.path(name)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        if self.file_permissions_mode is not None:
            os.chmod(full_path, self.file_permissions_mode)
        return str(name).replace("\\", "/")

    def _folder_made(self, directory: str) -> None:
        try:
            if self.directory_permissions_mode is not None:
                # os.makedirs() leaves "mode" off the intermediate folders (as Django says).
                old = os.umask(0o777 & ~self.directory_permissions_mode)
                try:
                    os.makedirs(directory, self.directory_permissions_mode, exist_ok=True)
                finally:
                    os.umask(old)
            else:
                os.makedirs(directory, exist_ok=True)
        except FileExistsError as exc:
            raise FileExistsError(f"{directory} exists and is not a directory.") from exc

    def _written(self, directory: str, content: Any) -> str:
        """``content`` in a new temporary file of ``directory``, on disk; its path."""
        temporary = os.path.join(directory, TEMPORARY_PREFIX + secrets.token_hex(8))
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o666)  # fmt: skip
        try:
            with os.fdopen(fd, "wb") as file:
                if hasattr(content, "seek") and getattr(content, "seekable", lambda: True)():
                    content.seek(0)
                for chunk in content.chunks():
                    file.write(chunk if isinstance(chunk, bytes) else chunk.encode())
                file.flush()
                os.fsync(file.fileno())
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
        return temporary

    @staticmethod
    def _placed(temporary: str, full_path: str, *, overwrite: bool) -> None:
        if overwrite:
            os.replace(temporary, full_path)
            return
        try:
            # A hard link fails where the name is taken: the file appears whole or not at all.
            os.link(temporary, full_path)
        except FileExistsError:
            raise
        except OSError:
            # A file system without hard links: a rename, after a look (a narrow race).
            if os.path.lexists(full_path):
                raise FileExistsError(full_path) from None
            os.rename(temporary, full_path)
