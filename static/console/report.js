/* A report being built by a worker (202): show its progress, reload when it is ready. */
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  const box = document.getElementById("report-building");
  if (!box) return;
  const bar = document.getElementById("build-progress");
  async function tick() {
    const r = await window.Console.api("GET", box.dataset.reportUrl);
    if (r.status === 200) { window.location.reload(); return; }
    if (r.data && typeof r.data.progress === "number") bar.value = r.data.progress;
    window.setTimeout(tick, 2000);
  }
  window.setTimeout(tick, 2000);
});
