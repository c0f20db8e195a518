#include "emulator/sm100_mma_completion.h"

#include <algorithm>

namespace opencute::emulator {

void MmaCompletion::record(std::vector<InFlight>& list, uint64_t seq, const ir::Op* op, unsigned issuer_rank,
                           int issuer_warp, unsigned block, uint32_t begin, uint32_t end) {
  for (InFlight& m : list)
    if (m.issuer_rank == issuer_rank && m.issuer_warp == issuer_warp && m.block == block && m.begin == begin &&
        m.end == end) {
      // The same columns again (a K loop): done when the latest is, which no commit tracks yet.
      m.op = op, m.seq = seq, m.commit = nullptr;
      return;
    }
  list.push_back({op, issuer_rank, issuer_warp, seq, block, begin, end, nullptr, 0, 0});
}

void MmaCompletion::issue(const ir::Op* op, unsigned issuer_rank, int issuer_warp, unsigned block, uint32_t begin,
                          uint32_t end) {
  record(mmas_, ++seq_, op, issuer_rank, issuer_warp, block, begin, end);
}

void MmaCompletion::copy(const ir::Op* op, unsigned issuer_rank, int issuer_warp, unsigned block, uint32_t begin,
                         uint32_t end) {
  record(copies_, ++seq_, op, issuer_rank, issuer_warp, block, begin, end);
}

void MmaCompletion::commit(const ir::Op* op, unsigned issuer_rank, int issuer_warp, unsigned block, uintptr_t bar,
                           uint64_t phase) {
  bool tracks = false;
  for (std::vector<InFlight>* list : {&mmas_, &copies_})
    for (InFlight& m : *list) {
      if (m.issuer_rank != issuer_rank || m.issuer_warp != issuer_warp) continue;
      tracks = true;
      if (!m.commit) m.commit = op, m.commit_block = block, m.commit_bar = bar;
    }
  if (tracks) commits_.push_back({issuer_rank, issuer_warp, seq_, block, bar, phase});
}

void MmaCompletion::waited(unsigned block, uintptr_t bar, uint64_t completed) {
  for (size_t k = 0; k < commits_.size();) {
    const Commit c = commits_[k];
    if (c.block != block || c.bar != bar || c.phase >= completed) {
      ++k;
      continue;
    }
    commits_.erase(commits_.begin() + long(k));
    for (std::vector<InFlight>* list : {&mmas_, &copies_})
      list->erase(std::remove_if(list->begin(), list->end(),
                                 [&](const InFlight& m) {
                                   return m.issuer_rank == c.issuer_rank && m.issuer_warp == c.issuer_warp &&
                                          m.seq <= c.seq;
                                 }),
                  list->end());
  }
  // Commits whose MMAs and copies are all known complete now track nothing.
  commits_.erase(std::remove_if(commits_.begin(), commits_.end(),
                                [&](const Commit& c) {
                                  for (const std::vector<InFlight>* list : {&mmas_, &copies_})
                                    for (const InFlight& m : *list)
                                      if (m.issuer_rank == c.issuer_rank && m.issuer_warp == c.issuer_warp &&
                                          m.seq <= c.seq)
                                        return false;
                                  return true;
                                }),
                 commits_.end());
}

const MmaCompletion::InFlight* MmaCompletion::writing(unsigned block, uint32_t begin, uint32_t end) const {
  for (const InFlight& m : mmas_)
    if (m.block == block && m.begin < end && begin < m.end) return &m;
  return nullptr;
}

const MmaCompletion::InFlight* MmaCompletion::copying(unsigned block, uint32_t begin, uint32_t end,
                                                      unsigned reader_rank, int reader_warp) const {
  for (const InFlight& m : copies_)
    if (m.block == block && m.begin < end && begin < m.end &&
        (m.issuer_rank != reader_rank || m.issuer_warp != reader_warp))
      return &m;
  return nullptr;
}

const MmaCompletion::InFlight* MmaCompletion::in_flight(unsigned block) const {
  for (const InFlight& m : mmas_)
    if (m.block == block) return &m;
  return nullptr;
}

}  // namespace opencute::emulator
