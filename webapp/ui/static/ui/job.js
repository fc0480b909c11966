/* One job's page: progress, ETA and each page's status follow the jobs API while it runs;
   a page's panel (image beside rendered text) appears as soon as that page is done. */
"use strict";
(function () {
  const POLL_MS = 1500;
  const Folio = window.Folio;

  function progressText(p) {
    let text = `${p.done} of ${p.total} pages done`;
    if (p.failed) text += `, ${p.failed} failed`;
    if (p.cancelled) text += `, ${p.cancelled} cancelled`;
    return text;
  }

  async function refreshPanel(root, number, status) {
    const panel = root.querySelector(`[data-panel="${number}"]`);
    if (!panel || panel.dataset.panelStatus === status) return;
    const response = await fetch(`${root.dataset.panelBase}${number}/`, { credentials: "same-origin" });
    if (!response.ok) return;
    const template = document.createElement("template");
    template.innerHTML = (await response.text()).trim();  // server-rendered, sanitized HTML
    const fresh = template.content.firstElementChild;
    panel.replaceWith(fresh);
    Folio.renderMath(fresh);
  }

  function updatePage(root, page) {
    const chip = root.querySelector(`[data-chip="${page.number}"]`);
    if (!chip) return;
    Folio.setStatusClass(chip, page.status);
    chip.title = `Page ${page.number}: ${Folio.statusLabels[page.status] || page.status}`;
    chip.querySelector("[data-chip-label]").textContent = ` ${Folio.statusLabels[page.status] || page.status}`;
  }

  // Every page of the job's page list that matches the filters, following its pages.
  async function pageList(root, filters) {
    const pages = [];
    let url = `${root.dataset.pagesApi}?${new URLSearchParams({ ...filters, page_size: "500" })}`;
    while (url) {
      const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) break;
      const listing = await response.json();
      pages.push(...listing.results);
      url = listing.next;
    }
    return pages;
  }

  async function poll(root) {
    let job;
    try {
      const response = await fetch(root.dataset.api, {
        headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) throw new Error(String(response.status));
      job = await response.json();
    } catch (error) {
      setTimeout(() => poll(root), POLL_MS * 2);
      return;
    }
    const p = job.progress;
    Folio.setProgress(root, job);
    root.querySelector("[data-progress-text]").textContent = progressText(p);
    root.querySelector("[data-percent]").textContent = `${Math.round(p.percent)}%`;
    root.querySelector("[data-eta]").textContent = Folio.isFinal(job.status)
      ? `took ${Folio.duration(p.elapsed_seconds)}`
      : p.eta_seconds === null ? "estimating time left…" : `about ${Folio.duration(p.eta_seconds)} left`;
    root.querySelector("[data-tokens]").textContent = String(job.usage.tokens);
    const waiting = root.querySelector("[data-waiting]");
    if (waiting) {
      waiting.hidden = !job.waiting_for;
      if (job.waiting_for) {
        const failsAt = new Date(job.waiting_for.fails_at).toISOString().slice(0, 16).replace("T", " ");
        waiting.textContent = `Waiting for a worker that serves ${job.waiting_for.engine}: none is ` +
          `running. Unless one starts, this job fails at ${failsAt} UTC.`;
      }
    }
    // The status document counts the pages; the pages whose state changed come from the
    // page list, only when the counts moved: the pages running now, and those that finished
    // since the latest finish seen (a long job's poll stays small).
    const summary = JSON.stringify(job.page_summary);
    if (summary !== root.dataset.summary) {
      root.dataset.summary = summary;
      const changed = [
        ...await pageList(root, { status: "running" }),
        ...await pageList(root, { finished_after: root.dataset.finishedAfter }),
      ];
      for (const page of changed) {
        if (page.finished_at && Date.parse(page.finished_at) > Date.parse(root.dataset.finishedAfter)) {
          root.dataset.finishedAfter = page.finished_at;
        }
        updatePage(root, page);
        await refreshPanel(root, page.number, page.status);
      }
    }
    if (Folio.isFinal(job.status)) {
      // Downloads and actions depend on the final state: take the page as the server draws it.
      window.location.reload();
      return;
    }
    setTimeout(() => poll(root), POLL_MS);
  }

  window.addEventListener("DOMContentLoaded", () => {
    const root = document.getElementById("job");
    if (root && root.dataset.final !== "true") setTimeout(() => poll(root), POLL_MS / 2);
  });
})();
