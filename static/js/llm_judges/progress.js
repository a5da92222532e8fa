/* Judge run progress: while a run on the page is pending or running, poll the project's runs
 * API every two seconds and update the bars and counts in place. Text is set with textContent
 * only. When every run has ended, reload once so the page shows final figures and problems. */
(function () {
  "use strict";

  const table = document.getElementById("judge-runs");
  if (!table) return;
  const url = table.dataset.url;
  const ACTIVE = new Set(["pending", "running"]);

  function rowsOnPage() {
    return Array.from(table.querySelectorAll("tr[data-run]"));
  }

  function anyActive() {
    return rowsOnPage().some((row) => {
      const status = row.querySelector(".status");
      return status && ACTIVE.has(status.textContent.trim());
    });
  }

  function update(row, run) {
    const bar = row.querySelector(".progress");
    bar.setAttribute("aria-valuenow", String(run.percent));
    bar.querySelector(".answered").style.width = run.percent_answered + "%";
    bar.querySelector(".unparseable").style.width = run.percent_unparseable + "%";
    bar.querySelector(".failed").style.width = run.percent_failed + "%";
    row.querySelector(".counts").textContent =
      `${run.done} done (${run.unparseable} unparseable) · ${run.failed} failed · ${run.total} item${run.total === 1 ? "" : "s"}`;
    const usage = row.querySelector(".usage");
    if (usage && run.usage) {
      usage.textContent = `${run.usage.calls} call${run.usage.calls === 1 ? "" : "s"} · ${run.usage.input_tokens} input / ${run.usage.output_tokens} output tokens`;
    }
    const pace = row.querySelector(".pace");
    if (pace) pace.textContent = run.pace_text || "";
    const notRun = row.querySelector(".not-run");
    if (notRun) notRun.textContent = run.not_run ? `${run.not_run} not run: budget` : "";
    const valid = row.querySelector(".schema-valid");
    if (valid) {
      valid.textContent = String(run.schema_valid);
      row.querySelector(".schema-replies").textContent = String(run.done);
    }
    const status = row.querySelector(".status");
    status.textContent = run.status;
    status.className = "status " + run.status;
  }

  async function poll() {
    let ended = false;
    try {
      const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (response.ok) {
        const data = await response.json();
        const byId = new Map(data.results.map((run) => [String(run.id), run]));
        for (const row of rowsOnPage()) {
          const run = byId.get(row.dataset.run);
          if (!run) continue;
          const wasActive = ACTIVE.has(row.querySelector(".status").textContent.trim());
          update(row, run);
          if (wasActive && !run.active) ended = true;
        }
      }
    } catch (e) {
      /* offline for a moment: try again at the next tick */
    }
    if (ended && !anyActive()) { window.location.reload(); return; }
    if (anyActive()) setTimeout(poll, 2000);
  }

  if (anyActive()) setTimeout(poll, 2000);
})();
