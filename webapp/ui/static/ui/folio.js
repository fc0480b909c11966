/* Folio: small enhancements shared by every page (copy buttons, confirmations, tabs, formulas).
   Every page works without this file; it only makes things quicker. */
"use strict";
(function () {
  const Folio = (window.Folio = window.Folio || {});

  Folio.csrfToken = function () {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  };

  async function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return;
    }
    // Plain http on a LAN has no clipboard API: fall back to a selected textarea.
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }

  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-copy]");
    if (!button) return;
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    const label = button.textContent;
    try {
      await copyText(source.textContent);
      button.textContent = "Copied";
    } catch (error) {
      button.textContent = "Select and copy by hand";
    }
    setTimeout(() => { button.textContent = label; }, 2000);
  });

  document.addEventListener("submit", (event) => {
    const form = event.target.closest("form[data-confirm]");
    if (form && !window.confirm(form.dataset.confirm)) event.preventDefault();
  });

  // Tabs (rendered / raw Markdown): arrow keys move between tabs, as the ARIA pattern says.
  function selectTab(tab) {
    const list = tab.closest("[role=tablist]");
    for (const other of list.querySelectorAll("[role=tab]")) {
      const selected = other === tab;
      other.setAttribute("aria-selected", String(selected));
      other.tabIndex = selected ? 0 : -1;
      document.getElementById(other.getAttribute("aria-controls")).hidden = !selected;
    }
  }
  document.addEventListener("click", (event) => {
    const tab = event.target.closest("[role=tab]");
    if (tab) selectTab(tab);
  });
  document.addEventListener("keydown", (event) => {
    const tab = event.target.closest("[role=tab]");
    if (!tab || !["ArrowLeft", "ArrowRight"].includes(event.key)) return;
    const tabs = [...tab.closest("[role=tablist]").querySelectorAll("[role=tab]")];
    const next = tabs[(tabs.indexOf(tab) + (event.key === "ArrowRight" ? 1 : -1) + tabs.length) % tabs.length];
    selectTab(next);
    next.focus();
  });

  // Formulas arrive as TeX text in .math elements; KaTeX (served from here) draws them.
  // Without KaTeX they stay readable as TeX.
  Folio.renderMath = function (root) {
    if (!window.katex) return;
    for (const element of (root || document).querySelectorAll(".math:not(.katex-rendered)")) {
      try {
        window.katex.render(element.textContent, element, {
          displayMode: element.classList.contains("block"),
          throwOnError: false,
          trust: false,
        });
        element.classList.add("katex-rendered");
      } catch (error) {
        // Leave the TeX as text.
      }
    }
  };
  window.addEventListener("DOMContentLoaded", () => Folio.renderMath(document));

  Folio.duration = function (seconds) {
    if (seconds === null || seconds === undefined) return "";
    seconds = Math.round(seconds);
    if (seconds < 60) return `${seconds} s`;
    const minutes = Math.floor(seconds / 60);
    if (minutes < 60) return seconds % 60 ? `${minutes} min ${seconds % 60} s` : `${minutes} min`;
    return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  };
  Folio.statusLabels = {
    queued: "Queued", running: "Running", succeeded: "Done", partially_failed: "Partly failed",
    failed: "Failed", cancelled: "Cancelled",
  };
  Folio.setStatusClass = function (element, status) {
    for (const name of [...element.classList]) if (name.startsWith("status-")) element.classList.remove(name);
    element.classList.add(`status-${status}`);
  };
  Folio.setProgress = function (container, job) {
    const bar = container.querySelector("[data-progress-bar]");
    const wrapper = container.querySelector("[data-progress]");
    const percent = Math.round(job.progress.percent);
    if (bar) { bar.style.width = `${percent}%`; Folio.setStatusClass(bar, job.status); }
    if (wrapper) wrapper.setAttribute("aria-valuenow", String(percent));
    const badge = container.querySelector("[data-status-badge]");
    if (badge) { badge.textContent = Folio.statusLabels[job.status] || job.status; Folio.setStatusClass(badge, job.status); }
  };
  Folio.isFinal = (status) => !["queued", "running"].includes(status);
})();
