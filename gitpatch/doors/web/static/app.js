// The review page's few behaviours: confirm and send Approve / Reject / Undo through the JSON
// API, keep the proposals table current, and the keyboard. No build step, no libraries.
"use strict";
(() => {
  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
  const csrf = $('meta[name="csrf-token"]').content;
  const page = document.body.dataset.page;
  const by = $("#by");

  // Who decides: git's user.name/email, or a name typed once (kept in this browser).
  const saved = localStorage.getItem("gitpatch.by");
  if (saved) by.value = saved;
  by.addEventListener("change", () => {
    const name = by.value.trim();
    if (name && name !== by.dataset.git) localStorage.setItem("gitpatch.by", name);
    else localStorage.removeItem("gitpatch.by");
  });

  async function call(method, url, body) {
    const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (method === "POST") {
      init.headers["Content-Type"] = "application/json";
      init.headers["X-CSRF-Token"] = csrf;
      init.body = JSON.stringify(body || {});
    }
    const res = await fetch(url, init);
    let data;
    try { data = await res.json(); } catch (_) { data = { error: { message: res.status + " " + res.statusText } }; }
    if (!res.ok) throw (data && data.error) || { message: res.statusText };
    return data;
  }

  // A confirmation dialog; resolves to {by, reason} or null when cancelled.
  function confirmStep(title, text, needReason) {
    const dlg = $("#confirm"), err = $("#confirm-error"), reason = $("#confirm-reason");
    $("#confirm-title").textContent = title;
    $("#confirm-text").textContent = text;
    $("#confirm-reason-label").hidden = !needReason;
    reason.value = "";
    err.textContent = "";
    return new Promise((resolve) => {
      const done = (value) => {
        $("#confirm-ok").onclick = $("#confirm-cancel").onclick = dlg.oncancel = null;
        if (dlg.open) dlg.close();
        resolve(value);
      };
      $("#confirm-ok").onclick = (ev) => {
        ev.preventDefault();
        const name = by.value.trim();
        if (!name) { err.textContent = "Type your name in “Reviewing as” first."; by.focus(); return; }
        if (needReason && !reason.value.trim()) { err.textContent = "Say why: a reason is required."; reason.focus(); return; }
        done({ by: name, reason: reason.value.trim() });
      };
      $("#confirm-cancel").onclick = () => done(null);
      dlg.oncancel = () => done(null);
      dlg.showModal();
      (needReason ? reason : $("#confirm-ok")).focus();
    });
  }

  function report(data, failed) {
    const out = $("#result");
    out.classList.toggle("error", Boolean(failed));
    if (failed) {
      out.textContent = (data.code ? data.code + ": " : "") + data.message + (data.hint ? " " + data.hint : "");
      return;
    }
    const head = data.head;
    out.textContent = data.result.message + (head && head.commit
      ? ` git log: ${head.branch} is now at ${head.commit.slice(0, 12)} “${head.summary}”.` : "")
      + (data.notices || []).map((line) => " " + line).join("");
  }

  // -- the proposal page ------------------------------------------------------------------
  function decided(status, label) {
    const art = $("#proposal");
    art.dataset.status = status;
    art.dataset.open = "no";
    const badge = $("#status");
    badge.className = "badge " + status;
    badge.textContent = label || status;
    $$(".decide button").forEach((b) => { b.disabled = true; });
  }

  let acting = false; // our own Approve / Reject is on its way: not "meanwhile"

  async function decide(verb) {
    const art = $("#proposal");
    const button = $("#" + verb);
    if (!art || !button || button.disabled) return;
    const id = art.dataset.id;
    const step = verb === "approve"
      ? await confirmStep("Approve " + id + "?", $("#preview") ? $("#preview").textContent : "Merge it into its target.", false)
      : await confirmStep("Reject " + id + "?", "Its branch is deleted and your reason is noted; the same change proposed again is refused.", true);
    if (!step) return;
    button.disabled = true;
    acting = true;
    try {
      const body = verb === "approve" ? { by: step.by } : { by: step.by, reason: step.reason };
      const data = await call("POST", `/api/proposals/${encodeURIComponent(id)}/${verb}`, body);
      decided(data.result.status);
      report(data, false);
    } catch (e) {
      button.disabled = false;
      report(e, true);
    } finally {
      acting = false;
    }
  }

  // -- one hunk: approve, reject with a reason, or edit in place (the same API as the CLI) ---
  async function decideHunk(verb, bar) {
    const art = $("#proposal"), hunk = bar.dataset.hunk, n = bar.dataset.number;
    const step = verb === "approve"
      ? await confirmStep("Approve hunk " + n + " (" + hunk + ")?", "Only this hunk lands, as one commit; the rest stays open.", false)
      : await confirmStep("Reject hunk " + n + " (" + hunk + ")?", "Only this hunk is refused; the agent reads your reason with its lines.", true);
    if (!step) return;
    acting = true;
    try {
      const body = verb === "approve" ? { by: step.by, hunks: hunk } : { by: step.by, reason: step.reason, hunks: hunk };
      await call("POST", `/api/proposals/${encodeURIComponent(art.dataset.id)}/${verb}`, body);
      location.reload();
    } catch (e) {
      report(e, true);
    } finally {
      acting = false;
    }
  }

  async function saveHunk(bar) {
    const art = $("#proposal"), name = by.value.trim();
    if (!name) { report({ message: "Type your name in “Reviewing as” first." }, true); by.focus(); return; }
    acting = true;
    try {
      const text = $(".hunk-text", bar).value;
      await call("POST", `/api/proposals/${encodeURIComponent(art.dataset.id)}/amend`, { by: name, hunk: bar.dataset.hunk, text });
      location.reload();
    } catch (e) {
      report(e, true);
    } finally {
      acting = false;
    }
  }

  function wireHunks() {
    $$(".hunk-bar").forEach((bar) => {
      $(".hunk-approve", bar).addEventListener("click", () => decideHunk("approve", bar));
      $(".hunk-reject", bar).addEventListener("click", () => decideHunk("reject", bar));
      const edit = $(".hunk-edit", bar);
      if (!edit) return;
      const editor = $(".hunk-editor", bar);
      edit.addEventListener("click", () => { editor.hidden = false; $(".hunk-text", bar).focus(); });
      $(".hunk-cancel", bar).addEventListener("click", () => { editor.hidden = true; });
      $(".hunk-save", bar).addEventListener("click", () => saveHunk(bar));
    });
    $$("td.ln-new").forEach((td) => td.addEventListener("click", () => {
      $("#comment-at").value = td.dataset.at;
      $("#comment-text").focus();
    }));
  }

  // -- comments and whole sessions ---------------------------------------------------------
  async function sendComment(kind) {
    const art = $("#proposal"), text = $("#comment-text");
    const name = by.value.trim();
    if (!name) { report({ message: "Type your name in “Reviewing as” first." }, true); by.focus(); return; }
    if (!text.value.trim()) { report({ message: "Write the comment first." }, true); text.focus(); return; }
    const at = $("#comment-at").value.trim();
    try {
      const body = { by: name, text: text.value.trim(), kind };
      if (at) body.at = at;
      await call("POST", `/api/proposals/${encodeURIComponent(art.dataset.id)}/comment`, body);
      location.reload();
    } catch (e) {
      report(e, true);
    }
  }

  async function decideSession(verb, session) {
    const step = verb === "approve"
      ? await confirmStep("Approve session " + session + "?", "Every open proposal of the session lands on its target, bottom first.", false)
      : await confirmStep("Reject session " + session + "?", "Every open proposal of the session is rejected with your reason.", true);
    if (!step) return;
    try {
      const body = verb === "approve" ? { by: step.by } : { by: step.by, reason: step.reason };
      const data = await call("POST", `/api/sessions/${encodeURIComponent(session)}/${verb}`, body);
      report(data, false);
      refreshRows();
    } catch (e) {
      report(e, true);
    }
  }

  // -- the proposals table: poll a cheap stamp, fetch the rows only when it changed ---------
  async function refreshRows() {
    const table = $("#proposals");
    const status = table.dataset.status;
    try {
      const now = (await call("GET", "/api/stamp")).stamp;
      if (now !== table.dataset.stamp) {
        const res = await fetch("/fragment/proposals?status=" + encodeURIComponent(status), { credentials: "same-origin" });
        if (res.ok) {
          const current = selected() && selected().dataset.id;
          $("#rows").innerHTML = await res.text();
          table.dataset.stamp = now;
          const again = $$("#rows tr.row").find((tr) => tr.dataset.id === current);
          if (again) select(again, false);
          $("#live").textContent = "Updated " + new Date().toLocaleTimeString() + ".";
        }
      }
    } catch (_) {
      $("#live").textContent = "Cannot reach gitpatch web; retrying.";
    }
    setTimeout(refreshRows, document.hidden ? 10000 : 3000);
  }

  // -- the proposal page: say so when someone else decided meanwhile ----------------------
  async function watchProposal(seen) {
    const art = $("#proposal");
    if (art.dataset.open !== "yes") return;
    try {
      if (acting) throw new Error("deciding");
      const now = (await call("GET", "/api/stamp")).stamp;
      if (now !== seen) {
        const data = await call("GET", "/api/proposals/" + encodeURIComponent(art.dataset.id));
        if (!data.open && art.dataset.open === "yes") {
          decided(data.info.status);
          report({ message: `It was ${data.info.status} meanwhile (another window or person); reload to see the note.` }, true);
          return;
        }
      }
      seen = now;
    } catch (_) { /* the server may be restarting; try again */ }
    setTimeout(() => watchProposal(seen), document.hidden ? 10000 : 4000);
  }

  async function undo() {
    const step = await confirmStep("Undo?", "Revert the newest gitpatch commit on this branch with a new commit (history is kept).", false);
    if (!step) return;
    try {
      const data = await call("POST", "/api/undo", {});
      report(data, false);
      setTimeout(() => location.reload(), 1500);
    } catch (e) { report(e, true); }
  }

  // -- keyboard: j/k move, o/Enter open, a approve, r reject, u undo ------------------------
  const items = () => page === "proposal" ? $$("section.file") : $$("tbody tr.row");
  const selected = () => $(".selected");
  function select(el, scroll = true) {
    $$(".selected").forEach((x) => x.classList.remove("selected"));
    el.classList.add("selected");
    if (scroll) el.scrollIntoView({ block: "nearest" });
  }
  function move(step) {
    const all = items();
    if (!all.length) return;
    const at = all.indexOf(selected());
    const next = at < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step));
    select(all[next]);
    if (page === "proposal") all[next].focus({ preventScroll: true });
  }
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || $("#confirm").open) return;
    if (ev.target.closest && ev.target.closest("input, textarea, select, [contenteditable]")) return;
    const key = ev.key;
    if (key === "j") move(1);
    else if (key === "k") move(-1);
    else if ((key === "o" || key === "Enter") && page === "index" && selected()) {
      const link = $("a", selected());
      if (link) location.href = link.href;
    } else if (key === "a" && page === "proposal") decide("approve");
    else if (key === "r" && page === "proposal") decide("reject");
    else if (key === "u" && page === "log") undo();
    else return;
    ev.preventDefault();
  });

  if (page === "proposal") {
    const a = $("#approve"), r = $("#reject");
    if (a) a.addEventListener("click", () => decide("approve"));
    if (r) r.addEventListener("click", () => decide("reject"));
    $("#request-changes").addEventListener("click", () => sendComment("request_changes"));
    $("#comment").addEventListener("click", () => sendComment("comment"));
    wireHunks();
    setTimeout(() => watchProposal($("#proposal").dataset.stamp), 2000);
  } else if (page === "index") {
    $$(".session-approve").forEach((b) => b.addEventListener("click", () => decideSession("approve", b.dataset.session)));
    $$(".session-reject").forEach((b) => b.addEventListener("click", () => decideSession("reject", b.dataset.session)));
    $("#rows").addEventListener("click", (ev) => {
      const tr = ev.target.closest("tr.row");
      if (tr) select(tr, false);
    });
    setTimeout(refreshRows, 3000);
  } else if (page === "log") {
    $("#undo").addEventListener("click", undo);
  }
})();
