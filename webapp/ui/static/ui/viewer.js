/* The page viewer: a zoomable page image (fit, 100 %, 200 %, drag to pan) whose layout
   blocks are boxes over the image. Hovering or focusing a block of the text lights its box;
   clicking a box scrolls the text to its block. Boxes are placed from the block's bbox in
   PDF points over the page's size in points, as percentages, so they follow any zoom. */
"use strict";
(function () {
  const CSS_PX_PER_POINT = 96 / 72;  // 100 % is the page at its printed size

  function placeBoxes(view) {
    const width = parseFloat(view.dataset.width), height = parseFloat(view.dataset.height);
    if (!width || !height) return;
    for (const box of view.querySelectorAll("[data-box]")) {
      const [x0, y0, x1, y1] = box.dataset.bbox.split(",").map(Number);
      box.style.left = `${(x0 / width) * 100}%`;
      box.style.top = `${(y0 / height) * 100}%`;
      box.style.width = `${((x1 - x0) / width) * 100}%`;
      box.style.height = `${((y1 - y0) / height) * 100}%`;
    }
  }

  function zoom(panel, level) {
    const view = panel.querySelector("[data-page-view]");
    const canvas = panel.querySelector("[data-page-canvas]");
    const image = canvas.querySelector("img");
    for (const button of panel.querySelectorAll("[data-zoom]")) {
      button.setAttribute("aria-pressed", String(button.dataset.zoom === level));
    }
    if (level === "fit") {
      canvas.style.width = "";
      view.classList.remove("zoomed");
      return;
    }
    // Width in points: the layout's, else the image's own proportions at 72 dpi.
    const points = parseFloat(view.dataset.width) || image.naturalWidth * 0.75;
    // One image serves every zoom: it is drawn for 200 % (model/page_images.py).
    canvas.style.width = `${points * CSS_PX_PER_POINT * Number(level)}px`;
    view.classList.add("zoomed");
  }

  function highlight(panel, id, on) {
    for (const element of panel.querySelectorAll(`[data-box="${id}"], [data-block="${id}"]`)) {
      element.classList.toggle("active", on);
    }
  }

  function clearHighlights(panel) {
    for (const element of panel.querySelectorAll(".active[data-box], .active[data-block]")) {
      element.classList.remove("active");
    }
  }

  function panning(view) {
    let start = null;
    view.addEventListener("pointerdown", (event) => {
      if (!view.classList.contains("zoomed") || event.target.closest("[data-box]")) return;
      start = { x: event.clientX, y: event.clientY, left: view.scrollLeft, top: view.scrollTop };
      view.setPointerCapture(event.pointerId);
      view.classList.add("panning");
    });
    view.addEventListener("pointermove", (event) => {
      if (!start) return;
      view.scrollLeft = start.left - (event.clientX - start.x);
      view.scrollTop = start.top - (event.clientY - start.y);
    });
    const stop = () => { start = null; view.classList.remove("panning"); };
    view.addEventListener("pointerup", stop);
    view.addEventListener("pointercancel", stop);
  }

  function setUp(root) {
    for (const view of root.querySelectorAll("[data-page-view]:not([data-ready])")) {
      view.dataset.ready = "true";
      placeBoxes(view);
      panning(view);
    }
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-zoom]");
    const panel = event.target.closest(".page-panel");
    if (!panel) return;
    if (button) { zoom(panel, button.dataset.zoom); return; }
    const box = event.target.closest("[data-box]");
    if (box) {
      const block = panel.querySelector(`[data-block="${box.dataset.box}"]`);
      if (!block) return;
      clearHighlights(panel);
      highlight(panel, box.dataset.box, true);
      block.scrollIntoView({ block: "center", behavior: "instant" });
      block.focus({ preventScroll: true });
      return;
    }
    const block = event.target.closest("[data-block]");
    if (block) {
      clearHighlights(panel);
      highlight(panel, block.dataset.block, true);
      const target = panel.querySelector(`[data-box="${block.dataset.block}"]`);
      if (target) target.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
  });
  for (const [type, on] of [["mouseover", true], ["mouseout", false], ["focusin", true], ["focusout", false]]) {
    document.addEventListener(type, (event) => {
      const block = event.target.closest && event.target.closest("[data-block]");
      const panel = block && block.closest(".page-panel");
      if (!panel) return;
      // A clicked block stays lit after the pointer leaves; hover lights the others in turn.
      if (!on && block.matches(":focus")) return;
      highlight(panel, block.dataset.block, on);
    });
  }

  window.addEventListener("DOMContentLoaded", () => {
    setUp(document);
    const panels = document.querySelector("[data-panels]");
    if (panels) new MutationObserver(() => setUp(panels)).observe(panels, { childList: true, subtree: true });
  });

  // A page image that no worker has drawn yet answers 202 with no image (the server never
  // draws a page itself): ask again shortly, while the server still says 202.
  document.addEventListener("error", async (event) => {
    const image = event.target;
    if (!(image instanceof HTMLImageElement) || !image.closest("[data-page-view]")) return;
    const tries = Number(image.dataset.tries || 0);
    if (tries >= 60) return;
    const url = new URL(image.src, window.location.href);
    const answer = await fetch(url, { method: "HEAD", credentials: "same-origin" }).catch(() => null);
    if (!answer || answer.status !== 202) return;
    image.dataset.tries = String(tries + 1);
    url.searchParams.set("try", String(tries + 1));
    setTimeout(() => { image.src = url.toString(); }, 2000);
  }, true);
})();
