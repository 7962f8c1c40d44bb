/* The report page: a report being built by a worker (202) shows its progress and reloads when ready;
   an export built by a worker (the replication package: 202 with progress while it builds) shows its
   progress beside the links and downloads when it is ready. */
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  const box = document.getElementById("report-building");
  if (box) {
    const bar = document.getElementById("build-progress");
    const tick = async function () {
      const r = await window.Console.api("GET", box.dataset.reportUrl);
      if (r.status === 200) { window.location.reload(); return; }
      if (r.data && typeof r.data.progress === "number") bar.value = r.data.progress;
      window.setTimeout(tick, 2000);
    };
    window.setTimeout(tick, 2000);
  }

  const status = document.getElementById("export-status");
  const progress = document.getElementById("export-progress");
  const text = document.getElementById("export-text");
  function show(message, value) {
    status.hidden = false;
    text.textContent = message;
    if (typeof value === "number") progress.value = value;
  }
  async function fetchExport(link) {
    let res;
    try {
      res = await fetch(link.href, {credentials: "same-origin", headers: {"Accept": "application/zip, application/json"}});
    } catch (e) { show("The export could not be reached: " + e, 0); return; }
    if (res.status === 202) {
      let data = null;
      try { data = await res.json(); } catch (e) { data = null; }
      const value = data && typeof data.progress === "number" ? data.progress : undefined;
      show(link.textContent + ": a worker is building it" + (value !== undefined ? " (" + Math.round(100 * value) + "%)" : "") + "…", value);
      window.setTimeout(function () { fetchExport(link); }, 2000);
      return;
    }
    if (!res.ok) {
      let detail = "";
      try { detail = (await res.json()).detail || ""; } catch (e) { detail = ""; }
      show(link.textContent + ": failed (" + res.status + ") " + detail, 0);
      return;
    }
    const blob = await res.blob();
    const disposition = res.headers.get("Content-Disposition") || "";
    const match = /filename="?([^";]+)"?/.exec(disposition);
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = match ? match[1] : "export.zip";
    document.body.appendChild(a);
    a.click();
    a.remove();
    show(link.textContent + ": downloaded.", 1);
  }
  document.querySelectorAll("a[data-async-export]").forEach(function (link) {
    link.addEventListener("click", function (ev) {
      ev.preventDefault();
      show(link.textContent + ": requesting…", 0);
      fetchExport(link);
    });
  });
});
