"""Documents that are not page images: Office, OpenDocument, e-books, web pages and text.

- ``types``: the formats, their MIME types and how each is read.
- ``sniff``: which format the bytes prove (never the name).
- ``guards``: the refusals that come before any conversion, by an XML parser (zip bombs,
  DTDs and entities, outside links; linked images kept as placeholders).
- ``structure``: Office/OpenDocument/HTML/CSV to Markdown units with docling's format backends.
- ``webpage``: a web page's main content, the way Jina Reader picks it.
- ``text``: Markdown and plain text, decoded and normalised.
- ``parts``: long Markdown cut into bounded parts (a "page" of a format without pages).
- ``ebooks``: EPUB, XPS, FB2, MOBI, CBZ and SVG through PyMuPDF, as PDF pages.
- ``libreoffice``: LibreOffice in the worker: legacy formats (DOC, PPT, XLS, RTF) saved in
  their current format, and Office and OpenDocument files laid out as PDF.
- ``sandbox``: LibreOffice started without any network (a namespace, a seccomp filter).
- ``renditions``: the page images of Office and OpenDocument pages, drawn from that PDF.
"""
