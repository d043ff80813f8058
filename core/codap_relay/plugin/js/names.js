// @ts-check
// Names the tools accept for datasets and attributes. The tools address datasets and collections by CODAP id,
// so a name may hold any character; only an empty or overlong name is refused.

/**
 * @param {string} kind "Dataset", "Attribute"… (the sentence's subject)
 * @param {unknown} name
 * @returns {string | null} why the name is refused, or null
 */
export function nameProblem(kind, name) {
  if (typeof name !== "string" || name.trim() === "") return `${kind} name must be a non-empty string.`;
  if (name.length > 200) return `${kind} name is longer than 200 characters.`;
  return null;
}
