(function () {
  "use strict";
  // the root this script closes (the last one on the page, if a notebook moved the script)
  var script = document.currentScript;
  var all = document.querySelectorAll(".tf-inspect");
  var root = (script && script.closest(".tf-inspect")) || all[all.length - 1];
  var boxes = Array.prototype.slice.call(root.querySelectorAll(".tf-filters input[type=checkbox]"));
  var rows = Array.prototype.slice.call(root.querySelectorAll(".tf-row"));
  var shown = root.querySelector(".tf-shown");

  function checked(kind) {
    var out = {};
    boxes.forEach(function (box) {
      if (box.dataset.filter === kind && box.checked) {
        out[box.value] = true;
      }
    });
    return out;
  }

  // a row shows when its action is checked and one of its roles is
  function apply() {
    var roles = checked("role");
    var actions = checked("action");
    var visible = 0;
    rows.forEach(function (row) {
      var show = actions[row.dataset.action] === true &&
        row.dataset.roles.split(" ").some(function (role) { return roles[role] === true; });
      row.hidden = !show;
      if (show) {
        visible += 1;
      }
    });
    shown.textContent = visible + " of " + rows.length + " rows shown";
  }

  // a link may name the filters: #actions=dropped,summarized&roles=user (others: all checked)
  var named = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (pair) {
    var kv = pair.split("=");
    if (kv.length === 2 && (kv[0] === "roles" || kv[0] === "actions")) {
      named[kv[0] === "roles" ? "role" : "action"] = kv[1].split(",");
    }
  });
  boxes.forEach(function (box) {
    var only = named[box.dataset.filter];
    if (only) {
      box.checked = only.indexOf(box.value) >= 0;
    }
    box.addEventListener("change", apply);
  });
  apply();
  root.dataset.ready = "true";
})();
