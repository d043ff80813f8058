// CODAP addresses datasets, collections and attributes by name inside [...] in a resource string.
// Its parser takes everything up to the first "]", so a name holding "]" cannot be addressed by name.

export function nameProblem(kind, name) {
  if (typeof name !== "string" || name.trim() === "") return `${kind} name must be a non-empty string.`;
  if (name.includes("]")) {
    return `${kind} name ${JSON.stringify(name)} contains "]", which CODAP cannot address by name; choose a name without it.`;
  }
  if (name.length > 200) return `${kind} name is longer than 200 characters.`;
  return null;
}

export const dataContext = (name) => `dataContext[${name}]`;
export const collection = (dataset, name) => `dataContext[${dataset}].collection[${name}]`;
