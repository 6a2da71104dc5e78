"""Where models live on this disk: the GGUF files embedded in pip packages (split files joined once), and
the de-quantised copies cached under ``$LPES_CACHE`` (default ``~/.cache/lpes_framework``), each folder
with a manifest of its files' sizes and hashes, so a damaged one is rebuilt instead of failing deep
inside safetensors."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from filelock import FileLock, Timeout

from ..errors import LpesError
from ..io.atomic import atomic_file, file_digest, replace_folder


def cache_dir() -> Path:
    return Path(os.environ.get("LPES_CACHE", Path.home() / ".cache" / "lpes_framework"))


def _installed_file(ref: str) -> Path:
    """'distribution:relative/path' -> absolute path inside that installed distribution."""
    dist_name, _, rel = ref.partition(":")
    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        raise LpesError(f"embedded model package '{dist_name}' is not installed (run `make install`)") from None
    path = Path(dist.locate_file(rel))
    if not path.is_file():
        raise LpesError(f"'{rel}' is missing from the installed package '{dist_name}'")
    return path


def embedded_gguf(parts: list[str], filename: str) -> Path:
    """The GGUF behind an embedded model; split files are joined once into the cache."""
    paths = [_installed_file(p) for p in parts]
    if len(paths) == 1:
        return paths[0]
    target = cache_dir() / "gguf" / filename
    expected = sum(p.stat().st_size for p in paths)
    if not target.is_file() or target.stat().st_size != expected:
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(target, "wb") as out:
            for p in paths:
                with open(p, "rb") as src:
                    shutil.copyfileobj(src, out, 1 << 24)
    return target


SOURCE = "source.json"


def _stamp(gguf: Path) -> dict:
    stat = gguf.stat()
    return {"path": str(gguf.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def converted_folder(gguf_dir: str, gguf_file: str, part: str) -> Path:
    """Cache folder for the tokenizer or model converted from one GGUF file (keyed by path, size, mtime)."""
    gguf = Path(gguf_dir) / gguf_file
    stamp = _stamp(gguf)
    tag = hashlib.sha1(f"{stamp['path']}:{stamp['size']}:{stamp['mtime_ns']}".encode()).hexdigest()[:12]
    return cache_dir() / "converted" / f"{gguf.stem}-{tag}" / part


def _unreachable(folder: Path) -> bool:
    """Whether a converted folder's GGUF (as its source.json recorded it) is gone or changed, so that no load
    can key to it again. A folder without a readable record (an older lpes, or not ours) is never judged so."""
    try:
        stamp = json.loads((folder / SOURCE).read_text())
        path, size, mtime = stamp["path"], stamp["size"], stamp["mtime_ns"]
    except (OSError, ValueError, TypeError, KeyError):
        return False
    if not (isinstance(path, str) and isinstance(size, int) and isinstance(mtime, int)):
        return False
    try:
        stat = os.stat(path)
    except (OSError, ValueError):
        return True
    return (stat.st_size, stat.st_mtime_ns) != (size, mtime)


def _drop_unreachable_twins(folder: Path) -> None:
    """Remove the copies of the same GGUF name that no load can reach any more: each reinstall of a venv (a
    new path) or of the package (a new mtime) keys a new copy, and the old ones (0.5 GB for SmolLM2, 2.4 GB for
    Qwen2.5-0.5B) piled up."""
    stem = folder.name.rpartition("-")[0]
    for other in folder.parent.iterdir():
        twin = other.name.rpartition("-")[0] == stem
        if other == folder or not twin or other.is_symlink() or not other.is_dir() or not _unreachable(other):
            continue
        try:
            with FileLock(f"{other}.lock", timeout=0):  # another process is still busy with it: left
                shutil.rmtree(other, ignore_errors=True)
        except (Timeout, OSError):
            continue
        Path(f"{other}.lock").unlink(missing_ok=True)


@contextmanager
def converting(gguf_dir: str, gguf_file: str | None):
    """Held while a process reads or builds the converted copies of one GGUF file. Without it, two processes
    that both found no cache converted it twice, and the second swapped its folder in (removing the first's
    files) while the first was still reading them."""
    if not gguf_file:
        yield
        return
    folder = converted_folder(gguf_dir, gguf_file, "model").parent
    lock = FileLock(f"{folder}.lock")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except OSError as exc:  # a read-only cache, or a link planted at the lock's path (filelock won't follow it)
        raise LpesError(f"cannot take the model cache's lock {folder}.lock ({exc.strerror or exc}): set LPES_CACHE "
                        f"to a folder of your own, or remove that path if it is a link") from None
    try:
        if not (folder / SOURCE).is_file():  # a new copy: record its source, and drop the ones it supersedes
            with atomic_file(folder / SOURCE, "w") as out:
                json.dump(_stamp(Path(gguf_dir) / gguf_file), out)
            _drop_unreachable_twins(folder)
        yield
    finally:
        lock.release()


def save_dequantised(model, path) -> None:
    """``save_pretrained`` for a model loaded from GGUF: its weights are already plain tensors, but the
    GGUF quantizer marks it unsaveable, so the marker is dropped for the duration of the save."""
    quantizer = getattr(model, "hf_quantizer", None)
    had_config = hasattr(model.config, "quantization_config")
    qconfig = getattr(model.config, "quantization_config", None)
    try:
        model.hf_quantizer = None
        if had_config:
            del model.config.quantization_config
        model.save_pretrained(path)
    finally:
        model.hf_quantizer = quantizer
        if had_config:
            model.config.quantization_config = qconfig


MANIFEST = "lpes-manifest.json"


def _manifest(folder: Path) -> dict:
    return {p.name: {"size": p.stat().st_size, "blake2b": file_digest(p)}
            for p in sorted(folder.iterdir()) if p.is_file() and p.name != MANIFEST}


def save_to_cache(obj, target: Path) -> None:
    def fill(tmp: Path) -> None:
        save_dequantised(obj, tmp) if hasattr(obj, "hf_quantizer") else obj.save_pretrained(tmp)
        (tmp / MANIFEST).write_text(json.dumps(_manifest(tmp), indent=1))

    replace_folder(target, fill)


def damage(folder: Path, hashes: bool) -> str | None:
    """What is wrong with a cached folder against its manifest (sizes always, contents when ``hashes``),
    or None when it is intact."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return "no readable manifest (written by an older lpes, or cut short)"
    for name, want in manifest.items():
        path = folder / name
        if not path.is_file() or path.stat().st_size != want["size"]:
            return f"{name} is missing or has the wrong size"
        if hashes and file_digest(path) != want["blake2b"]:
            return f"{name} does not match its hash"
    return None


def cache_intact(folder: Path, hashes: bool = False) -> bool:
    """Whether a converted folder can be used; a damaged one is removed (and so rebuilt from the GGUF)."""
    if not folder.is_dir():
        return False
    problem = damage(folder, hashes)
    if problem is None:
        return True
    print(f"lpes: the model cache {folder} is damaged ({problem}); rebuilding it from the GGUF file", file=sys.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    return False
