/* The job list: rows of running jobs follow their progress (one API call per poll). */
"use strict";
(function () {
  const POLL_MS = 2000;

  async function poll() {
    const rows = [...document.querySelectorAll("tr[data-job]")].filter(
      (row) => !window.Folio.isFinal(row.dataset.status));
    if (!rows.length) return;
    try {
      await Promise.all(rows.map(async (row) => {
        const response = await fetch(`/v1/jobs/${row.dataset.job}`, {
          headers: { Accept: "application/json" }, credentials: "same-origin" });
        if (!response.ok) return;
        const job = await response.json();
        row.dataset.status = job.status;
        window.Folio.setProgress(row, job);
        const p = job.progress;
        row.querySelector("[data-progress-text]").textContent = `${p.done + p.failed} / ${p.total} pages`;
        row.querySelector("[data-duration]").textContent = window.Folio.duration(p.elapsed_seconds);
      }));
    } catch (error) {
      // The server is restarting or the network dropped: try again next time.
    }
    setTimeout(poll, POLL_MS);
  }
  window.addEventListener("DOMContentLoaded", () => setTimeout(poll, POLL_MS / 2));
})();
