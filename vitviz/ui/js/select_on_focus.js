// A searchable dropdown's focus: select the text it shows (the current choice's label), so what the person
// types replaces it and filters the choices (typing used to append to the label: "predicted class (top-1)macaw").
// Event js of a gr.Dropdown's focus; __ELEM_ID__ is the dropdown's elem_id.
() => {
  const input = document.querySelector("#" + __ELEM_ID__ + " input");
  if (input) input.select();
}
