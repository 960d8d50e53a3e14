// The inspector's only script: "/" focuses the search box, and the forget button stays
// disabled until its confirmation box is ticked. The pages work without it.
document.addEventListener("keydown", (event) => {
  const box = document.getElementById("q");
  if (event.key === "/" && box && document.activeElement !== box) {
    event.preventDefault();
    box.focus();
  }
});
document.addEventListener("DOMContentLoaded", () => {
  const tick = document.getElementById("forget-confirm");
  const button = document.getElementById("forget-button");
  if (tick && button) {
    button.disabled = !tick.checked;
    tick.addEventListener("change", () => { button.disabled = !tick.checked; });
  }
});
