// (filled in by its family's work)

export function createHistoryTools(_ctx) {
  return {};
}
