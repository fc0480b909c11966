"""A page's Markdown as safe HTML: rendered on the server, then sanitized with nh3.

Transcribed text is untrusted: a document may contain ``<script>`` or ``<img onerror=…>`` as
its own words. Raw HTML in the Markdown is therefore shown as the text it is, except the few
tags that engines write on purpose (HTML tables, line breaks, super- and subscripts); those
pass through nh3, which keeps only an allow-list of tags and attributes whatever comes in.
Images are never loaded (a figure link would point at a file that is not served, and a
hostile one at another server): they become a visible placeholder. Formulas become
``.math`` elements holding their TeX as text, for KaTeX in the browser.
"""

from __future__ import annotations

import re
from html import escape

import nh3
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.texmath import texmath_plugin

# Engines emit HTML tables when asked for table_format=html.
_PASSED_BLOCK = re.compile(r"^\s*<(table|thead|tbody|tr|th|td)[\s>]", re.IGNORECASE)
_PASSED_INLINE = re.compile(r"^</?(br|sup|sub)\s*/?>$", re.IGNORECASE)

ALLOWED_TAGS = {
    "p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code",
    "em", "strong", "del", "s", "a", "hr", "br", "sup", "sub", "span", "div",
    "table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption", "colgroup", "col",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "th": {"colspan", "rowspan", "style"},
    "td": {"colspan", "rowspan", "style"},
}
ALLOWED_CLASSES = {"span": {"math", "inline", "figure-ref"}, "div": {"math", "block"}}


def _html_block(renderer, tokens, index, options, env) -> str:
    content = tokens[index].content
    if _PASSED_BLOCK.match(content):
        return content
    return f"<p>{escape(content.strip())}</p>\n"


def _html_inline(renderer, tokens, index, options, env) -> str:
    content = tokens[index].content
    return content if _PASSED_INLINE.match(content) else escape(content)


def _image(renderer, tokens, index, options, env) -> str:
    token = tokens[index]
    label = token.content or token.attrGet("src") or "image"
    return f'<span class="figure-ref">[figure: {escape(str(label))}]</span>'


def _math_inline(renderer, tokens, index, options, env) -> str:
    return f'<span class="math inline">{escape(tokens[index].content)}</span>'


def _math_block(renderer, tokens, index, options, env) -> str:
    return f'<div class="math block">{escape(tokens[index].content.strip())}</div>\n'


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.use(dollarmath_plugin, double_inline=True).use(texmath_plugin, delimiters="brackets")
    md.add_render_rule("html_block", _html_block)
    md.add_render_rule("html_inline", _html_inline)
    md.add_render_rule("image", _image)
    for name in ("math_inline", "math_inline_double"):
        md.add_render_rule(name, _math_inline)
    for name in ("math_block", "math_block_label", "math_block_eqno"):
        md.add_render_rule(name, _math_block)
    return md


_MD = _parser()


def sanitize(html: str) -> str:
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        allowed_classes=ALLOWED_CLASSES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
    )


def markdown_html(text: str) -> str:
    """Safe HTML for one page's Markdown (mark it safe only after this)."""
    return sanitize(_MD.render(text or ""))
