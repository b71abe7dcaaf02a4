// The live training page: fetch the run's state as JSON and redraw the parts that change, without reloading.
// Every value goes in as text (textContent), never as HTML: run and task names come from the ledger.
"use strict";
(function () {
  const root = document.getElementById("live");
  if (!root) return;
  const src = root.dataset.src;
  const interval = 1000 * parseFloat(root.dataset.interval || "2");
  const $ = (id) => document.getElementById(id);
  const text = (id, value) => { $(id).textContent = value; };
  function el(tag, value, cls) {
    const e = document.createElement(tag);
    if (value !== undefined) e.textContent = value;
    if (cls) e.className = cls;
    return e;
  }
  function rows(id, data) {  // keep the header row, replace the rest
    const table = $(id);
    while (table.rows.length > 1) table.deleteRow(1);
    for (const cells of data) {
      const tr = table.insertRow();
      for (const c of cells) tr.appendChild(el("td", String(c)));
    }
  }
  const join = (obj, fmt) => Object.entries(obj).map(fmt).join(", ") || "none";
  function draw(d) {
    const s = d.state;
    text("current-step", s.current_step === null ? "-" : s.current_step);
    text("steps", s.steps);
    text("trajectories", s.trajectories);
    text("at", s.at.slice(0, 19) + "Z");
    const w = s.waiting;
    text("waiting", w ? `waiting for step ${w.next_step}${w.epoch_boundary ? " (the start of a new pass)" : ""}: ` +
      `${w.waited_s} s so far vs a median of ${w.median_s} s` : "");
    text("in-flight", join(s.in_flight_wv, ([k, v]) => `wv ${k}: ${v}`));
    rows("staleness", Object.entries(s.staleness));
    rows("outcomes", Object.entries(s.outcome_pct));
    rows("waits", s.waits.map((x) => [x.step, x.wait_s === null ? "bad timestamps" : x.wait_s,
      x.median_before_s === null ? "-" : x.median_before_s,
      x.slow ? "SLOW" + (x.epoch_boundary ? " (epoch boundary)" : "") : ""]));
    rows("signatures", s.signature_buckets.map((b) => [`${b.wv_from}-${b.wv_to}`, b.trials,
      join(b.hits, ([n, k]) => `${n} ${(100 * k / b.trials).toFixed(1)}%`)]));
    const list = $("alerts");
    list.replaceChildren();
    for (const a of d.alerts) {
      const li = el("li", undefined, "alert");
      li.dataset.rule = a.rule;
      li.appendChild(el("b", a.rule));
      li.appendChild(document.createTextNode(": " + a.message));
      list.appendChild(li);
    }
    if (!d.alerts.length) list.appendChild(el("li", "none", "muted none"));
  }
  async function tick() {
    try {
      const res = await fetch(src, { cache: "no-store" });
      if (res.ok) draw(await res.json());
      text("refresh", res.ok ? `refreshes every ${interval / 1000} s without reloading` : `refresh failed: HTTP ${res.status}`);
    } catch (e) {
      text("refresh", "refresh failed: " + e);
    }
    setTimeout(tick, interval);
  }
  setTimeout(tick, interval);
})();
