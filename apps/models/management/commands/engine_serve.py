import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import CommandParser

from apps.core.commands import ProjectCommand
from apps.models.devices import generator_key
from apps.models.generator import OFFLINE_GENERATORS
from apps.models.llamacpp_server import ServerOptions, serve


class Command(ProjectCommand):
    help = (
        "Serve an offline generator's GGUF with llama.cpp's OpenAI-compatible server (xllamacpp) until stopped; "
        "RAGKG_ENGINE=llamacpp makes `make up` start it and send it the answers."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--model", choices=sorted(OFFLINE_GENERATORS), help="default: RAGKG_ENGINE_MODEL, else RAGKG_GENERATOR"
        )
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=settings.ENGINE_PORT)
        parser.add_argument("--threads", type=int, default=settings.ENGINE_THREADS, help="0: one per core")
        parser.add_argument("--parallel", type=int, default=settings.ENGINE_PARALLEL, help="answers at once")
        parser.add_argument("--context", type=int, default=settings.ANSWER_CONTEXT_TOKENS * 2, help="per answer")

    def handle(self, *args: Any, **options: Any) -> None:
        key = options["model"] or generator_key(settings.ENGINE_MODEL or settings.GENERATOR, settings.MODEL_DEVICE)
        model = OFFLINE_GENERATORS[key]
        gguf = model.gguf(settings.MODEL_CACHE_DIR)
        server_options = ServerOptions(
            host=options["host"],
            port=options["port"],
            threads=options["threads"],
            parallel=options["parallel"],
            context=options["context"],
            api_key=settings.GENERATOR_API_KEY,
        )
        server = serve(gguf, model.name, server_options)
        self.stdout.write(f"serving {model.name} at http://{options['host']}:{options['port']}/v1 (Ctrl-C stops)")
        stopped = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stopped.set())
        stopped.wait()
        del server
