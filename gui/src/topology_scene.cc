#include "topology_scene.h"

#include <QGraphicsEllipseItem>
#include <QGraphicsLineItem>
#include <QGraphicsRectItem>
#include <QGraphicsSceneMouseEvent>
#include <QGraphicsSimpleTextItem>
#include <QHelpEvent>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <map>

namespace rdmalab::gui {

namespace {
constexpr double kHostGap = 28, kTierGap = 140, kHostSize = 14, kSwitchW = 22, kSwitchH = 14;
const QColor kIdle(170, 170, 170);
}  // namespace

QColor TopologyScene::colourFor(double u) {
  if (u <= 0) return kIdle;
  u = std::min(1.0, u);
  // green (low) → yellow → red (full)
  if (u < 0.5) return QColor::fromRgbF(static_cast<float>(2 * u), 0.75f, 0.1f);
  return QColor::fromRgbF(1.0f, static_cast<float>(0.75 * (1 - u) * 2), 0.1f);
}

void TopologyScene::build(const Topology& topo) {
  clear();
  topo_ = topo;
  nodes_.clear();
  links_.clear();
  node_to_drawn_.assign(topo.nodes.size(), -1);
  link_to_drawn_.assign(topo.links.size(), -1);
  util_.assign(topo.links.size(), 0.0);
  peak_.assign(topo.links.size(), 0.0);
  selected_ = -1;
  flow_links_.assign(topo.links.size(), 0);
  any_flow_ = false;
  collapsed_ = false;
  int max_tier = 0;
  for (const auto& n : topo.nodes) max_tier = std::max(max_tier, n.tier);
  if (max_tier > 0)
    layoutTree(topo);
  else
    layoutGrid(topo);

  // One drawn link per pair of drawn nodes: both directions, parallel links and grouped hosts'
  // links fold into it.
  std::map<std::pair<int, int>, int> pair_to_link;
  for (std::size_t i = 0; i < topo.links.size(); ++i) {
    const auto& l = topo.links[i];
    if (l.ends.size() != 2) continue;
    int a = node_to_drawn_[static_cast<std::size_t>(l.ends[0])], b = node_to_drawn_[static_cast<std::size_t>(l.ends[1])];
    if (a < 0 || b < 0 || a == b) continue;
    auto key = std::minmax(a, b);
    auto it = pair_to_link.find(key);
    if (it == pair_to_link.end()) {
      DrawnLink dl;
      dl.a = key.first;
      dl.b = key.second;
      QPointF pa = nodes_[static_cast<std::size_t>(dl.a)].item->sceneBoundingRect().center();
      QPointF pb = nodes_[static_cast<std::size_t>(dl.b)].item->sceneBoundingRect().center();
      dl.item = addLine(QLineF(pa, pb));
      dl.item->setZValue(-1);
      it = pair_to_link.emplace(key, static_cast<int>(links_.size())).first;
      links_.push_back(dl);
    }
    links_[static_cast<std::size_t>(it->second)].members.push_back(static_cast<int>(i));
    link_to_drawn_[i] = it->second;
  }
  for (auto& l : links_) restyle(l);
  setSceneRect(itemsBoundingRect().adjusted(-40, -40, 40, 40));
}

void TopologyScene::layoutTree(const Topology& topo) {
  int max_tier = 0, hosts = 0;
  for (const auto& n : topo.nodes) {
    max_tier = std::max(max_tier, n.tier);
    hosts += n.kind == "host";
  }
  collapsed_ = hosts > kCollapseHosts;
  // The switch above each host (its first link's other end), to group hosts and order them.
  std::vector<int> parent(topo.nodes.size(), -1);
  for (const auto& l : topo.links)
    if (l.ends.size() == 2 && topo.nodes[static_cast<std::size_t>(l.ends[0])].tier == 0 &&
        topo.nodes[static_cast<std::size_t>(l.ends[1])].tier == 1 && parent[static_cast<std::size_t>(l.ends[0])] < 0)
      parent[static_cast<std::size_t>(l.ends[0])] = l.ends[1];

  // Rows from the top tier down to the hosts; each row a list of drawn nodes.
  std::vector<std::vector<int>> rows(static_cast<std::size_t>(max_tier) + 1);
  auto add_node = [&](std::vector<int> members, QString label, bool is_switch, int tier) {
    DrawnNode dn;
    dn.members = std::move(members);
    dn.label = std::move(label);
    const QColor fill = is_switch ? QColor(70, 110, 170) : QColor(90, 160, 90);
    if (is_switch)
      dn.item = addRect(0, 0, kSwitchW, kSwitchH, QPen(Qt::black, 0.8), fill);
    else if (dn.members.size() > 1)
      dn.item = addRect(0, 0, kSwitchW * 1.4, kHostSize, QPen(Qt::black, 0.8), QColor(150, 200, 150));
    else
      dn.item = addEllipse(0, 0, kHostSize, kHostSize, QPen(Qt::black, 0.8), fill);
    const int idx = static_cast<int>(nodes_.size());
    for (int m : dn.members) node_to_drawn_[static_cast<std::size_t>(m)] = idx;
    nodes_.push_back(std::move(dn));
    rows[static_cast<std::size_t>(max_tier - tier)].push_back(idx);
  };
  // Switches: by tier, then dragonfly group, then their order in the record.
  std::vector<int> order(topo.nodes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    const auto &a = topo.nodes[static_cast<std::size_t>(x)], &b = topo.nodes[static_cast<std::size_t>(y)];
    return a.group < b.group;
  });
  for (int i : order) {
    const auto& n = topo.nodes[static_cast<std::size_t>(i)];
    if (n.tier > 0) add_node({i}, QString::fromStdString(n.name), true, n.tier);
  }
  // Hosts: under their switch, in the order of the switches; grouped when collapsed.
  std::vector<std::vector<int>> under(topo.nodes.size());
  std::vector<int> orphans;
  for (std::size_t i = 0; i < topo.nodes.size(); ++i)
    if (topo.nodes[i].tier == 0) (parent[i] >= 0 ? under[static_cast<std::size_t>(parent[i])] : orphans).push_back(static_cast<int>(i));
  std::vector<int> switch_order;
  for (int d : rows[static_cast<std::size_t>(max_tier - 1)]) switch_order.push_back(nodes_[static_cast<std::size_t>(d)].members[0]);
  for (int s : switch_order) {
    auto& hs = under[static_cast<std::size_t>(s)];
    if (hs.empty()) continue;
    if (collapsed_) {
      const auto& first = topo.nodes[static_cast<std::size_t>(hs.front())];
      const auto& last = topo.nodes[static_cast<std::size_t>(hs.back())];
      add_node(hs, QStringLiteral("%1 nodes: rank %2–%3").arg(hs.size()).arg(first.rank).arg(last.rank), false, 0);
    } else {
      for (int h : hs) add_node({h}, QString::fromStdString(topo.nodes[static_cast<std::size_t>(h)].name), false, 0);
    }
  }
  for (int h : orphans) add_node({h}, QString::fromStdString(topo.nodes[static_cast<std::size_t>(h)].name), false, 0);
  // Nodes with a model inside: GPUs and NICs written under each (when there is room).
  if (!collapsed_ && hosts <= 32)
    for (auto& dn : nodes_)
      if (dn.members.size() == 1) {
        const auto& tn = topo.nodes[static_cast<std::size_t>(dn.members[0])];
        if (tn.gpus > 0) {
          auto* t = addSimpleText(QStringLiteral("%1 GPU\n%2 NIC").arg(tn.gpus).arg(tn.nics));
          t->setParentItem(dn.item);
          t->setScale(0.7);
          t->setPos(-4, kHostSize + 2);
        }
      }

  // Rows centred on the widest one.
  std::size_t widest = 1;
  for (const auto& r : rows) widest = std::max(widest, r.size());
  const double gap = collapsed_ ? kHostGap * 1.6 : kHostGap;
  const double width = static_cast<double>(widest) * gap;
  // Wide trees get taller tiers, so links between tiers stay apart.
  const double tier_gap = std::max(kTierGap, width / (2.5 * static_cast<double>(rows.size())));
  tier_gap_ = tier_gap;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double step = width / static_cast<double>(std::max<std::size_t>(1, rows[r].size()));
    for (std::size_t k = 0; k < rows[r].size(); ++k) {
      auto* item = nodes_[static_cast<std::size_t>(rows[r][k])].item;
      const QRectF b = item->boundingRect();
      item->setPos(step * (static_cast<double>(k) + 0.5) - b.width() / 2, static_cast<double>(r) * tier_gap);
    }
  }
  // Tier names at the left, and how to read the colours.
  bool routers = false;
  for (const auto& n : topo.nodes) routers = routers || n.group >= 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const int tier = max_tier - static_cast<int>(r);
    QString name = tier == 0   ? (collapsed_ ? QStringLiteral("nodes (grouped)") : QStringLiteral("nodes"))
                   : routers   ? QStringLiteral("routers")
                   : tier == 1 ? (max_tier == 1 ? QStringLiteral("switch") : QStringLiteral("leaves"))
                   : tier == 2 && max_tier == 2 ? QStringLiteral("spines")
                                                : QStringLiteral("tier %1").arg(tier);
    auto* t = addSimpleText(name);
    t->setBrush(QColor(90, 90, 90));
    t->setPos(-130, static_cast<double>(r) * tier_gap - 2);
  }
  auto* legend = addSimpleText(QStringLiteral("links: grey idle, green → yellow → red = utilisation, thicker = busier; blue = selected node's links"));
  legend->setBrush(QColor(90, 90, 90));
  legend->setPos(-130, -60);
}

void TopologyScene::layoutGrid(const Topology& topo) {
  const int n = static_cast<int>(topo.nodes.size());
  const int cols = std::max(1, static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n)))));
  for (int i = 0; i < n; ++i) {
    DrawnNode dn;
    dn.members = {i};
    dn.label = QString::fromStdString(topo.nodes[static_cast<std::size_t>(i)].name);
    dn.item = addEllipse(0, 0, kHostSize, kHostSize, QPen(Qt::black, 0.8), QColor(90, 160, 90));
    dn.item->setPos((i % cols) * kHostGap * 3, (i / cols) * kHostGap * 3);
    node_to_drawn_[static_cast<std::size_t>(i)] = static_cast<int>(nodes_.size());
    nodes_.push_back(std::move(dn));
  }
}

void TopologyScene::restyle(DrawnLink& l) const {
  double u = 0;
  for (int m : l.members) u = std::max(u, util_[static_cast<std::size_t>(m)]);
  l.util = u;
  bool on_flow = false;
  for (int m : l.members) on_flow = on_flow || (static_cast<std::size_t>(m) < flow_links_.size() && flow_links_[static_cast<std::size_t>(m)]);
  const bool sel = on_flow || (selected_ >= 0 && (std::find(nodes_[static_cast<std::size_t>(l.a)].members.begin(),
                                                nodes_[static_cast<std::size_t>(l.a)].members.end(), selected_) !=
                                          nodes_[static_cast<std::size_t>(l.a)].members.end() ||
                                      std::find(nodes_[static_cast<std::size_t>(l.b)].members.begin(),
                                                nodes_[static_cast<std::size_t>(l.b)].members.end(), selected_) !=
                                          nodes_[static_cast<std::size_t>(l.b)].members.end()));
  // Many links side by side: thinner, so they do not merge into one block.
  const double extra = links_.size() > 150 ? 1.5 : 4.0;
  QPen pen(sel ? QColor(30, 90, 255) : colourFor(u), (sel ? 2.5 : links_.size() > 150 ? 0.6 : 1.0) + extra * std::min(1.0, u));
  pen.setCosmetic(true);
  l.item->setPen(pen);
}

void TopologyScene::setUtilisation(const std::vector<double>& util, const std::vector<double>& peak) {
  if (util.size() != util_.size()) return;
  util_ = util;
  peak_ = peak.size() == util.size() ? peak : util;
  for (auto& l : links_) {
    double u = 0;
    for (int m : l.members) u = std::max(u, util_[static_cast<std::size_t>(m)]);
    if (u == l.util && selected_ < 0 && !any_flow_) continue;  // unchanged: no repaint
    restyle(l);
  }
}

void TopologyScene::setHighlightedLinks(const std::vector<int>& links) {
  flow_links_.assign(topo_.links.size(), 0);
  any_flow_ = !links.empty();
  for (int l : links)
    if (l >= 0 && static_cast<std::size_t>(l) < flow_links_.size()) flow_links_[static_cast<std::size_t>(l)] = 1;
  for (auto& l : links_) restyle(l);
}

bool TopologyScene::highlighted(int d) const { return links_[static_cast<std::size_t>(d)].item->pen().color() == QColor(30, 90, 255); }

void TopologyScene::selectNode(int node) {
  if (node >= static_cast<int>(topo_.nodes.size())) node = -1;
  if (selected_ >= 0 && node_to_drawn_[static_cast<std::size_t>(selected_)] >= 0)
    nodes_[static_cast<std::size_t>(node_to_drawn_[static_cast<std::size_t>(selected_)])].item->setPen(QPen(Qt::black, 0.8));
  selected_ = node;
  if (node >= 0 && node_to_drawn_[static_cast<std::size_t>(node)] >= 0)
    nodes_[static_cast<std::size_t>(node_to_drawn_[static_cast<std::size_t>(node)])].item->setPen(QPen(QColor(30, 90, 255), 3));
  for (auto& l : links_) restyle(l);
  emit nodeSelected(node);
}

int TopologyScene::drawnNodeOf(int node) const {
  return node >= 0 && node < static_cast<int>(node_to_drawn_.size()) ? node_to_drawn_[static_cast<std::size_t>(node)] : -1;
}
int TopologyScene::drawnLinkOf(int link) const {
  return link >= 0 && link < static_cast<int>(link_to_drawn_.size()) ? link_to_drawn_[static_cast<std::size_t>(link)] : -1;
}
QColor TopologyScene::linkColour(int d) const { return links_[static_cast<std::size_t>(d)].item->pen().color(); }

QPointF TopologyScene::nodeCentre(int node) const {
  const int d = drawnNodeOf(node);
  return d < 0 ? QPointF() : nodes_[static_cast<std::size_t>(d)].item->sceneBoundingRect().center();
}

int TopologyScene::nodeAt(QPointF pos) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].item->sceneBoundingRect().contains(pos)) return nodes_[i].members.size() == 1 ? nodes_[i].members[0] : -1;
  return -1;
}

QString TopologyScene::describeAt(QPointF pos) const {
  for (const auto& n : nodes_) {
    if (!n.item->sceneBoundingRect().contains(pos)) continue;
    QString s = n.label;
    if (n.members.size() == 1) {
      const auto& tn = topo_.nodes[static_cast<std::size_t>(n.members[0])];
      if (tn.kind == "host" && tn.gpus > 0)
        s += QStringLiteral("\nranks %1–%2: %3 GPUs, %4 NICs, %5 PCIe switches, %6 CPU sockets")
                 .arg(tn.rank)
                 .arg(tn.rank + tn.gpus - 1)
                 .arg(tn.gpus)
                 .arg(tn.nics)
                 .arg(tn.pcie_switches)
                 .arg(tn.sockets);
      else
        s += tn.kind == "host" ? QStringLiteral("\nrank %1").arg(tn.rank) : QStringLiteral("\nswitch, tier %1").arg(tn.tier);
      if (tn.group >= 0) s += QStringLiteral(", group %1").arg(tn.group);
    }
    // Its links: how busy now and at most.
    double now = 0, peak = 0;
    int count = 0;
    for (const auto& l : links_)
      if (&nodes_[static_cast<std::size_t>(l.a)] == &n || &nodes_[static_cast<std::size_t>(l.b)] == &n)
        for (int m : l.members) {
          now = std::max(now, util_[static_cast<std::size_t>(m)]);
          peak = std::max(peak, peak_[static_cast<std::size_t>(m)]);
          ++count;
        }
    s += QStringLiteral("\n%1 links: busiest now %2 %, peak %3 %").arg(count).arg(100 * now, 0, 'f', 1).arg(100 * peak, 0, 'f', 1);
    return s;
  }
  // Links: the nearest within a few pixels.
  for (const auto& l : links_) {
    const QLineF line = l.item->line();
    const QPointF d = line.p2() - line.p1();
    const double len2 = d.x() * d.x() + d.y() * d.y();
    if (len2 <= 0) continue;
    const double t = std::clamp(((pos - line.p1()).x() * d.x() + (pos - line.p1()).y() * d.y()) / len2, 0.0, 1.0);
    const QPointF c = line.p1() + t * d;
    if (QLineF(c, pos).length() > 4) continue;
    QString s = QStringLiteral("%1 ↔ %2").arg(nodes_[static_cast<std::size_t>(l.a)].label, nodes_[static_cast<std::size_t>(l.b)].label);
    int shown = 0;
    for (int m : l.members) {
      if (shown++ == 8) {
        s += QStringLiteral("\n… %1 more").arg(l.members.size() - 8);
        break;
      }
      const auto& tl = topo_.links[static_cast<std::size_t>(m)];
      s += QStringLiteral("\n%1: %2 Gb/s, %3 us, now %4 %, peak %5 %")
               .arg(QString::fromStdString(tl.name))
               .arg(tl.bandwidth_Bps * 8 / 1e9, 0, 'f', 1)
               .arg(tl.latency_s * 1e6, 0, 'f', 3)
               .arg(100 * util_[static_cast<std::size_t>(m)], 0, 'f', 1)
               .arg(100 * peak_[static_cast<std::size_t>(m)], 0, 'f', 1);
    }
    return s;
  }
  return {};
}

void TopologyScene::mousePressEvent(QGraphicsSceneMouseEvent* event) {
  if (event->button() == Qt::LeftButton) {
    const int n = nodeAt(event->scenePos());
    if (n >= 0 || selected_ >= 0) selectNode(n == selected_ ? -1 : n);
  }
  QGraphicsScene::mousePressEvent(event);
}

// ---------------------------------------------------------------------------------------------
void NodeScene::show(const TopoNode& n) {
  clear();
  under_switch_ = through_root_ = across_sockets_ = 0;
  if (n.gpus == 0 || n.gpu_switch.empty()) {
    auto* t = addSimpleText(n.kind == "host" ? QStringLiteral("%1: no node model (fabric.node.model: pcie or a fabric.preset draws its GPUs and NICs)")
                                                   .arg(QString::fromStdString(n.name))
                                             : QStringLiteral("%1: a switch").arg(QString::fromStdString(n.name)));
    t->setBrush(QColor(90, 90, 90));
    setSceneRect(itemsBoundingRect().adjusted(-10, -10, 10, 10));
    return;
  }
  constexpr double kBox = 34, kGap = 10, kRow = 70;
  // Each switch's column: its GPUs then its NICs, side by side.
  std::vector<std::vector<int>> gpus_of(static_cast<std::size_t>(n.pcie_switches)), nics_of(static_cast<std::size_t>(n.pcie_switches));
  for (int g = 0; g < n.gpus; ++g) gpus_of[static_cast<std::size_t>(n.gpu_switch[static_cast<std::size_t>(g)])].push_back(g);
  for (int k = 0; k < n.nics; ++k) nics_of[static_cast<std::size_t>(n.nic_switch[static_cast<std::size_t>(k)])].push_back(k);
  std::vector<QPointF> gpu_at(static_cast<std::size_t>(n.gpus)), nic_at(static_cast<std::size_t>(n.nics)), switch_at(static_cast<std::size_t>(n.pcie_switches));
  std::vector<double> socket_x0(static_cast<std::size_t>(n.sockets), 1e9), socket_x1(static_cast<std::size_t>(n.sockets), -1e9);
  double x = 0;
  const QPen thin(Qt::black, 0.8);
  for (int sock = 0; sock < n.sockets; ++sock)
    for (int w = 0; w < n.pcie_switches; ++w) {
      if (n.switch_socket[static_cast<std::size_t>(w)] != sock) continue;
      const auto& gs = gpus_of[static_cast<std::size_t>(w)];
      const auto& ks = nics_of[static_cast<std::size_t>(w)];
      const double width = std::max<double>(1, static_cast<double>(gs.size() + ks.size())) * (kBox + kGap);
      switch_at[static_cast<std::size_t>(w)] = QPointF(x + width / 2, kRow);
      auto* sw = addRect(x + width / 2 - kBox / 2, kRow - 10, kBox, 20, thin, QColor(70, 110, 170));
      sw->setToolTip(QStringLiteral("PCIe switch %1 (socket %2)").arg(w).arg(sock));
      double cx = x;
      for (int g : gs) {
        gpu_at[static_cast<std::size_t>(g)] = QPointF(cx + kBox / 2, 2 * kRow);
        auto* item = addRect(cx, 2 * kRow - 12, kBox, 24, thin, QColor(90, 160, 90));
        item->setToolTip(QStringLiteral("GPU %1: rank %2, uses NIC %3").arg(g).arg(n.rank + g).arg(n.gpu_nic[static_cast<std::size_t>(g)]));
        auto* t = addSimpleText(QStringLiteral("GPU%1").arg(g));
        t->setScale(0.75);
        t->setPos(cx + 3, 2 * kRow - 7);
        cx += kBox + kGap;
      }
      for (int k : ks) {
        nic_at[static_cast<std::size_t>(k)] = QPointF(cx + kBox / 2, 2 * kRow);
        auto* item = addRect(cx, 2 * kRow - 12, kBox, 24, thin, QColor(220, 200, 120));
        item->setToolTip(QStringLiteral("NIC %1 (PCIe switch %2)").arg(k).arg(w));
        auto* t = addSimpleText(QStringLiteral("NIC%1").arg(k));
        t->setScale(0.75);
        t->setPos(cx + 4, 2 * kRow - 7);
        cx += kBox + kGap;
      }
      for (int g : gs) addLine(QLineF(switch_at[static_cast<std::size_t>(w)], gpu_at[static_cast<std::size_t>(g)] - QPointF(0, 12)), thin)->setZValue(-1);
      for (int k : ks) addLine(QLineF(switch_at[static_cast<std::size_t>(w)], nic_at[static_cast<std::size_t>(k)] - QPointF(0, 12)), thin)->setZValue(-1);
      socket_x0[static_cast<std::size_t>(sock)] = std::min(socket_x0[static_cast<std::size_t>(sock)], x);
      socket_x1[static_cast<std::size_t>(sock)] = std::max(socket_x1[static_cast<std::size_t>(sock)], x + width);
      x += width + 2 * kGap;
    }
  std::vector<QPointF> socket_at(static_cast<std::size_t>(n.sockets));
  for (int sock = 0; sock < n.sockets; ++sock) {
    if (socket_x0[static_cast<std::size_t>(sock)] > socket_x1[static_cast<std::size_t>(sock)]) {
      socket_x0[static_cast<std::size_t>(sock)] = x;
      socket_x1[static_cast<std::size_t>(sock)] = x + kBox;
      x += kBox + kGap;
    }
    const double cx = (socket_x0[static_cast<std::size_t>(sock)] + socket_x1[static_cast<std::size_t>(sock)]) / 2;
    socket_at[static_cast<std::size_t>(sock)] = QPointF(cx, 0);
    auto* cpu = addRect(cx - 40, -12, 80, 24, thin, QColor(150, 150, 190));
    cpu->setToolTip(QStringLiteral("CPU socket %1: root complex and host memory").arg(sock));
    auto* t = addSimpleText(QStringLiteral("CPU%1 + memory").arg(sock));
    t->setScale(0.75);
    t->setPos(cx - 36, -7);
  }
  for (int w = 0; w < n.pcie_switches; ++w)
    addLine(QLineF(socket_at[static_cast<std::size_t>(n.switch_socket[static_cast<std::size_t>(w)])] + QPointF(0, 12),
                   switch_at[static_cast<std::size_t>(w)] - QPointF(0, 10)),
            thin)
        ->setZValue(-1);
  for (int sock = 1; sock < n.sockets; ++sock)
    addLine(QLineF(socket_at[0] + QPointF(40, 0), socket_at[static_cast<std::size_t>(sock)] - QPointF(40, 0)), QPen(QColor(150, 150, 190), 3))
        ->setZValue(-1);
  // GPU → its NIC: how far the GPUDirect path goes.
  for (int g = 0; g < n.gpus; ++g) {
    const int k = n.gpu_nic[static_cast<std::size_t>(g)];
    const int sg = n.gpu_switch[static_cast<std::size_t>(g)], sk = n.nic_switch[static_cast<std::size_t>(k)];
    QColor c(120, 120, 120);
    QString how = QStringLiteral("under one PCIe switch");
    if (sg != sk && n.switch_socket[static_cast<std::size_t>(sg)] == n.switch_socket[static_cast<std::size_t>(sk)]) {
      c = QColor(240, 140, 0);
      how = QStringLiteral("through the CPU root complex");
      ++through_root_;
    } else if (sg != sk) {
      c = QColor(220, 30, 30);
      how = QStringLiteral("across the socket link");
      ++across_sockets_;
    } else {
      ++under_switch_;
    }
    const QPointF a = gpu_at[static_cast<std::size_t>(g)] + QPointF(0, 12), b = nic_at[static_cast<std::size_t>(k)] + QPointF(0, 12);
    const double dip = 18 + 6 * (g % 4);
    QPainterPath path(a);
    path.cubicTo(a + QPointF(0, dip * 2), b + QPointF(0, dip * 2), b);
    auto* item = addPath(path, QPen(c, 2));
    item->setToolTip(QStringLiteral("GPU %1 → NIC %2: %3").arg(g).arg(k).arg(how));
  }
  auto* legend = addSimpleText(QStringLiteral("%1 (ranks %2–%3)\nGPU → its NIC: grey under one switch, orange through the CPU root, red across sockets")
                                   .arg(QString::fromStdString(n.name))
                                   .arg(n.rank)
                                   .arg(n.rank + n.gpus - 1));
  legend->setBrush(QColor(70, 70, 70));
  legend->setPos(0, -60);
  setSceneRect(itemsBoundingRect().adjusted(-10, -10, 10, 10));
}

// ---------------------------------------------------------------------------------------------
TopologyView::TopologyView(TopologyScene* scene, QWidget* parent) : QGraphicsView(scene, parent), scene_(scene) {
  setRenderHint(QPainter::Antialiasing);
  setDragMode(QGraphicsView::ScrollHandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setViewportUpdateMode(QGraphicsView::BoundingRectViewportUpdate);
}

void TopologyView::fit() {
  if (!scene_->items().isEmpty()) fitInView(scene_->sceneRect(), Qt::KeepAspectRatio);
}

void TopologyView::wheelEvent(QWheelEvent* event) {
  const double f = std::pow(1.0015, event->angleDelta().y());
  scale(f, f);
}

bool TopologyView::viewportEvent(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(event);
    const QString text = scene_->describeAt(mapToScene(he->pos()));
    if (text.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(he->globalPos(), text, this);
    return true;
  }
  return QGraphicsView::viewportEvent(event);
}

}  // namespace rdmalab::gui
