/* Upload: drag and drop one or many files, check each one here before sending (type by its
   first bytes, as the server does; size; page selection), then send one job per file and
   show each file's outcome: a link to its job, or the server's reason in words. */
"use strict";
(function () {
  const PAGES = /^\s*[+-]?\d+\s*(-\s*([+-]?\d+)?\s*)?(,\s*[+-]?\d+\s*(-\s*([+-]?\d+)?\s*)?)*$/;
  const ACCEPTED = "PDF, an image, an Office or OpenDocument file, a web page, text or an e-book";

  function sniff(bytes) {
    const text = String.fromCharCode(...bytes.slice(0, 1024));
    if (text.includes("%PDF-")) return "PDF";
    if (bytes[0] === 0x89 && text.slice(1, 4) === "PNG") return "PNG";
    if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "JPEG";
    if (["II*\0", "MM\0*", "II+\0", "MM\0+"].includes(text.slice(0, 4))) return "TIFF";
    if (text.slice(0, 4) === "RIFF" && text.slice(8, 12) === "WEBP") return "WebP";
    // Containers (Office, OpenDocument, EPUB: zip; legacy Office: OLE2), RTF, MOBI, and text
    // (HTML, Markdown, CSV...): the server looks inside and decides.
    if (text.slice(0, 4) === "PK\x03\x04") return "zip";
    if (bytes[0] === 0xd0 && bytes[1] === 0xcf && bytes[2] === 0x11 && bytes[3] === 0xe0) return "OLE";
    if (text.slice(60, 68) === "BOOKMOBI") return "MOBI";
    if (bytes.length && !bytes.includes(0)) return "text";
    return null;
  }

  function size(bytes) {
    if (bytes < 1024) return `${bytes} bytes`;
    if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(0)} KB`;
    return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  }

  async function check(file, maxBytes) {
    if (file.size === 0) return "This file is empty (0 bytes).";
    if (file.size > maxBytes) return `This file is ${size(file.size)}; the server accepts at most ${size(maxBytes)}.`;
    const head = new Uint8Array(await file.slice(0, 1024).arrayBuffer());
    if (!sniff(head)) return `This is not a document Folio reads; use ${ACCEPTED}.`;
    return "";
  }

  window.addEventListener("DOMContentLoaded", () => {
    const form = document.getElementById("upload-form");
    if (!form || !window.fetch) return;
    const input = form.querySelector("input[type=file]");
    const zone = form.querySelector("[data-dropzone]");
    const list = form.querySelector("[data-file-list]");
    const pages = form.querySelector("input[name=pages]");
    const pagesError = form.querySelector("[data-pages-error]");
    const submit = form.querySelector("[data-submit]");
    const results = form.querySelector("[data-results]");
    const maxBytes = Number(form.dataset.maxBytes);
    let chosen = [];  // [{file, error, item}]

    async function choose(files) {
      list.textContent = "";
      results.textContent = "";
      // Items go in the order the files were chosen; their checks finish in any order.
      chosen = await Promise.all([...files].map(async (file) => {
        const item = document.createElement("li");
        const name = document.createElement("span");
        name.className = "file-name";
        name.textContent = file.name;
        const note = document.createElement("span");
        note.className = "file-note";
        note.textContent = "Checking…";
        item.append(name, note);
        list.append(item);
        const error = await check(file, maxBytes);
        note.textContent = error || `${size(file.size)} · ready`;
        item.className = error ? "bad" : "ok";
        return { file, error, item, note };
      }));
    }

    input.addEventListener("change", () => choose(input.files));
    for (const type of ["dragenter", "dragover"]) {
      zone.addEventListener(type, (event) => { event.preventDefault(); zone.classList.add("dragover"); });
    }
    for (const type of ["dragleave", "drop"]) {
      zone.addEventListener(type, () => zone.classList.remove("dragover"));
    }
    zone.addEventListener("drop", (event) => {
      event.preventDefault();
      if (event.dataTransfer && event.dataTransfer.files.length) choose(event.dataTransfer.files);
    });

    function pagesProblem() {
      const value = pages.value.trim();
      return value && !PAGES.test(value)
        ? 'Write pages as numbers and ranges separated by commas, like "3", "1-3,7" or "5-".' : "";
    }
    pages.addEventListener("input", () => {
      pagesError.textContent = pagesProblem();
      pages.setAttribute("aria-invalid", String(Boolean(pagesError.textContent)));
    });

    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      pagesError.textContent = pagesProblem();
      if (pagesError.textContent) { pages.focus(); return; }
      const sendable = chosen.filter((entry) => !entry.error);
      if (!chosen.length) {
        results.innerHTML = "";
        const message = document.createElement("p");
        message.className = "field-error";
        message.setAttribute("role", "alert");
        message.textContent = "Choose at least one file to read.";
        results.append(message);
        input.focus();
        return;
      }
      if (!sendable.length) { results.textContent = "None of the chosen files can be read; see the notes above."; return; }
      submit.disabled = true;
      const started = [];
      for (const entry of sendable) {
        entry.item.className = "sending";
        entry.note.textContent = "Sending…";
        const body = new FormData();
        body.append("csrfmiddlewaretoken", window.Folio.csrfToken());
        body.append("files", entry.file, entry.file.name);
        for (const name of ["pages", "engine", "table_format", "webhook_url"]) {
          body.append(name, form.elements[name].value);
        }
        // Boxes as a browser sends them: present when ticked, absent otherwise.
        for (const name of ["speaker_notes", "comments"]) {
          if (form.elements[name].checked) body.append(name, "on");
        }
        try {
          const response = await fetch(form.action || window.location.href, {
            method: "POST", body, credentials: "same-origin", headers: { Accept: "application/json" } });
          const answer = await response.json();
          if (answer.ok) {
            entry.item.className = "ok";
            entry.note.textContent = "";
            const link = document.createElement("a");
            link.href = answer.job.url;
            link.textContent = "Started: follow its progress";
            entry.note.append(link);
            started.push(answer.job);
          } else {
            entry.item.className = "bad";
            entry.note.textContent = answer.error;
          }
        } catch (error) {
          entry.item.className = "bad";
          entry.note.textContent = "The server could not be reached; check the connection and try again.";
        }
      }
      submit.disabled = false;
      if (started.length === 1 && sendable.length === 1) {
        window.location.assign(started[0].url);
      } else if (started.length) {
        results.innerHTML = "";
        const message = document.createElement("p");
        message.setAttribute("role", "status");
        message.append(`${started.length} of ${chosen.length} files started. `);
        const link = document.createElement("a");
        link.href = "/jobs/";
        link.textContent = "See all jobs";
        message.append(link);
        results.append(message);
      }
    });
  });
})();
