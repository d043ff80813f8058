// (filled in by its family's work)

export function createComponentTools(_ctx) {
  return {};
}
