"""An OpenAI-compatible face: ``POST /v1/chat/completions`` reads the images of a chat
message (``image_url`` parts) and answers with their Markdown; ``GET /v1/models`` lists the
engines this server can run now. Errors come in OpenAI's shape, which its clients parse."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions
from rest_framework.views import APIView, exception_handler

from model.engines.registry import engine_names
from webapp.core.errors import ApiError, with_key_hint
from webapp.core.parsers import JSONParser
from webapp.core.workers import unserved_engine_refusal
from webapp.jobs import selectors, services
from webapp.jobs.errors import submission_api_error
from webapp.jobs.models import Job
from webapp.jobs.waiting import HeldWhileStreaming, WaiterSlot, job_updates, job_wait
from webapp.reader.engines import engine_for_model, engines_serving_now
from webapp.reader.options import MODELS
from webapp.reader.sources import Source, document_source


class ChatError(exceptions.APIException):
    def __init__(
        self, message: str, *, status: int = 400, code: str = "invalid_request_error", param=None
    ):
        super().__init__(message)
        self.status_code = status
        self.error_type = "invalid_request_error" if status < 500 else "server_error"
        self.error_code = code
        self.param = param


def openai_exception_handler(exc, context):
    exc = with_key_hint(exc)
    if isinstance(exc, RequestDataTooBig):
        # Django's own refusal would be an HTML 400, which OpenAI's clients cannot parse.
        exc = ChatError(
            "the request body is too large; send fewer or smaller images",
            status=413,
            code="request_too_large",
        )
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, ChatError):
        error_type, code, param = exc.error_type, exc.error_code, exc.param
    else:
        error_type = "invalid_request_error" if response.status_code < 500 else "server_error"
        code, param = getattr(exc, "name", None) or exc.__class__.__name__, None
    message = response.data.get("message") if isinstance(response.data, dict) else None
    response.data = {
        "error": {
            "message": message or str(getattr(exc, "detail", exc)),
            "type": error_type,
            "param": param,
            "code": code,
        }
    }
    return response


class OpenAIView(APIView):
    parser_classes = [JSONParser]

    def get_exception_handler(self):
        return openai_exception_handler


class ModelsView(OpenAIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT}, summary="Engines this server runs now")
    def get(self, request):
        served = engines_serving_now()
        models = sorted(served | {model for model in MODELS if _available(model)})
        return JsonResponse(
            {
                "object": "list",
                "data": [
                    {"id": name, "object": "model", "created": 0, "owned_by": "folio"}
                    for name in models
                ],
            }
        )


class ChatCompletionsView(OpenAIView):
    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT},
        summary="Read the images of a chat message (OpenAI chat completions)",
    )
    def post(self, request):
        body = request.data if isinstance(request.data, dict) else {}
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise ChatError(
                "`model` is required: an engine name such as local or jina-ocr-v1", param="model"
            )
        engine = _engine(model)
        images = _image_urls(body.get("messages"))
        # A chat request waits for its pages, holding a thread of this process: beyond
        # FOLIO_READER_WAITERS waiters it is refused before anything is fetched or written.
        slot = WaiterSlot()
        if not slot.taken:
            raise ChatError(
                "too many requests are waiting for their pages on this server; nothing was "
                "read or charged; retry in a few seconds, or read through the jobs API",
                status=503,
                code="server_busy",
            )
        try:
            return self._complete(
                request, body, model=model, engine=engine, images=images, slot=slot
            )
        finally:
            slot.release()  # a stream holds its own claim on the slot until it ends

    def _complete(
        self, request, body, *, model: str, engine: str, images: list[str], slot: WaiterSlot
    ):
        # Every image is fetched and checked before any job is written: all or nothing.
        sources = [_source(url) for url in images]
        try:
            jobs = services.jobs_submit_together(
                owner=request.user,
                documents=[(source.data, source.filename) for source in sources],
                engine=engine,
            )
        except services.SubmissionError as exc:
            raise submission_api_error(exc) from exc
        timeout = settings.FOLIO_READER_TIMEOUT
        if body.get("stream"):
            return _stream(jobs, model=model, timeout=timeout, slot=slot)
        finished = [job_wait(job_id=job.id, timeout=timeout) for job in jobs]
        unfinished = [job for job in finished if not job.is_final]
        if unfinished:
            raise ChatError(
                f"the pages were not read within {timeout} s; they go on as jobs "
                f"{', '.join(str(job.id) for job in unfinished)} in the jobs API",
                status=504,
                code="timeout",
            )
        return JsonResponse(_completion(finished, model=model))


def _source(url: str) -> Source:
    if url.startswith("data:"):
        return document_source(body={"file": url}, url=None)
    return document_source(body={}, url=url)


def _available(model: str) -> bool:
    try:
        engine_for_model(model)
    except ApiError:
        return False
    return True


def _engine(model: str) -> str:
    if model in MODELS:
        try:
            return engine_for_model(model)
        except ApiError as exc:
            raise ChatError(
                str(exc.detail), status=404, code="model_not_found", param="model"
            ) from exc
    if model in engine_names():
        refusal = unserved_engine_refusal(model)
        if refusal:
            raise ChatError(refusal, status=404, code="model_not_found", param="model")
        return model
    raise ChatError(
        f"the model {model!r} does not exist here; GET /v1/models lists the ones that do",
        status=404,
        code="model_not_found",
        param="model",
    )


def _image_urls(messages) -> list[str]:
    if not isinstance(messages, list) or not messages:
        raise ChatError("`messages` must be a non-empty list", param="messages")
    urls = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "image_url":
                image_url = part.get("image_url")
                url = image_url.get("url") if isinstance(image_url, dict) else image_url
                if not isinstance(url, str) or not url:
                    raise ChatError("an image_url part has no `url`", param="messages")
                urls.append(url)
    if not urls:
        raise ChatError(
            "no image in the messages: send each page as an image_url part "
            "(a data URL or an http(s) URL)",
            param="messages",
        )
    return urls


def _content(jobs: list[Job]) -> str:
    return "\n\n".join(selectors.job_markdown(job=job).strip() for job in jobs) + "\n"


def _usage(jobs: list[Job]) -> dict:
    prompt = sum(job.input_tokens for job in jobs)
    completion = sum(job.output_tokens for job in jobs)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _completion(jobs: list[Job], *, model: str) -> dict:
    return {
        "id": f"chatcmpl-{jobs[0].id.hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": _content(jobs)},
                "finish_reason": "stop",
            }
        ],
        "usage": _usage(jobs),
    }


def _stream(
    jobs: list[Job], *, model: str, timeout: float, slot: WaiterSlot
) -> StreamingHttpResponse:
    """Chat-completion chunks: each page's Markdown as soon as it is read, in order."""
    completion_id = f"chatcmpl-{jobs[0].id.hex}"
    created = int(time.time())

    def chunk(delta: dict, finish_reason=None, usage=None) -> str:
        body = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
        if usage is not None:
            body["usage"] = usage
        return f"data: {json.dumps(body)}\n\n"

    def events() -> Iterator[str]:
        yield chunk({"role": "assistant", "content": ""})
        deadline = time.monotonic() + timeout
        for index, job in enumerate(jobs):
            sent = 0
            for update in job_updates(job_id=job.id, timeout=max(0.0, deadline - time.monotonic())):
                for page in selectors.job_pages_finished_in_order(job=update, after=sent):
                    separator = "\n\n" if index or sent else ""
                    sent += 1
                    yield chunk({"content": separator + selectors.page_text(page)})
        finished = [Job.objects.get(pk=job.id) for job in jobs]
        done = all(job.is_final for job in finished)
        yield chunk({}, finish_reason="stop" if done else "length", usage=_usage(finished))
        yield "data: [DONE]\n\n"

    response = StreamingHttpResponse(
        HeldWhileStreaming(events(), slot.handed_over()), content_type="text/event-stream"
    )
    response["Cache-Control"] = "no-cache"
    return response
