// (filled in by its family's work)

export function createAttributeTools(_ctx) {
  return {};
}
