// Copy buttons: <button data-copy="ID"> copies the text of element ID.
// Everything works without this file; it only adds the copy.
document.addEventListener("click", function (ev) {
  var b = ev.target.closest("button[data-copy]");
  if (!b || !navigator.clipboard) return;
  var el = document.getElementById(b.getAttribute("data-copy"));
  if (!el) return;
  navigator.clipboard.writeText(el.textContent).then(function () {
    b.textContent = "✓";
  });
});
