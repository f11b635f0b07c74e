// The cluster drawn as a graph: hosts at the bottom, switches above them tier by tier (fat tree,
// star, dragonfly routers), hosts on a grid when there are no switches (torus, full mesh).
// Links are coloured and thickened by utilisation; when hosts would be too many to read, the
// hosts under one switch are drawn as one group, and their links as one (the busiest member's
// colour). Tooltips and selection come from the data, computed when asked.
#pragma once

#include <QGraphicsScene>
#include <QGraphicsView>
#include <QString>
#include <vector>

#include "rdmalab/record.h"

class QGraphicsLineItem;
class QAbstractGraphicsShapeItem;

namespace rdmalab::gui {

class TopologyScene : public QGraphicsScene {
  Q_OBJECT

 public:
  // More hosts than this are collapsed into one group per switch above them.
  static constexpr int kCollapseHosts = 128;

  // No spatial index: every link may change colour each frame, and re-indexing them costs more
  // than the few lookups (hover, click) an index would speed up.
  explicit TopologyScene(QObject* parent = nullptr) : QGraphicsScene(parent) { setItemIndexMethod(QGraphicsScene::NoIndex); }
  // Builds the items for a topology (replaces what was there).
  void build(const Topology& topo);
  // Colours every drawn link by the busiest of the links it stands for (util[i] for link i of
  // the topology, used / capacity), and keeps `peak` for the tooltips.
  void setUtilisation(const std::vector<double>& util, const std::vector<double>& peak);
  // Highlights a node (topology index) and its links; -1 clears.
  void selectNode(int node);
  // Also highlights these topology links (the routes of the selected node's flows).
  void setHighlightedLinks(const std::vector<int>& links);
  bool highlighted(int drawn_link) const;
  int selectedNode() const { return selected_; }

  // What the scene shows, for views and tests.
  int drawnNodes() const { return static_cast<int>(nodes_.size()); }
  int drawnLinks() const { return static_cast<int>(links_.size()); }
  bool collapsed() const { return collapsed_; }
  // The drawn item index of a topology node or link (-1 if none).
  int drawnNodeOf(int node) const;
  int drawnLinkOf(int link) const;
  QColor linkColour(int drawn_link) const;
  // Scene position of a topology node's drawing (its group's when collapsed).
  QPointF nodeCentre(int node) const;
  // Tooltip text for the item under a scene position (empty if none).
  QString describeAt(QPointF pos) const;
  // The topology node under a scene position (-1 if none or a group).
  int nodeAt(QPointF pos) const;

  static QColor colourFor(double util);

 signals:
  void nodeSelected(int node);

 protected:
  void mousePressEvent(QGraphicsSceneMouseEvent* event) override;

 private:
  struct DrawnNode {
    QAbstractGraphicsShapeItem* item = nullptr;
    std::vector<int> members;  // topology node indices (several for a group of hosts)
    QString label;
  };
  struct DrawnLink {
    QGraphicsLineItem* item = nullptr;
    std::vector<int> members;  // topology link indices (both directions, parallel links, groups)
    int a = -1, b = -1;        // drawn node indices
    double util = 0;
  };
  void layoutTree(const Topology& topo);
  void layoutGrid(const Topology& topo);
  void restyle(DrawnLink& l) const;

  Topology topo_;
  std::vector<DrawnNode> nodes_;
  std::vector<DrawnLink> links_;
  std::vector<int> node_to_drawn_, link_to_drawn_;
  std::vector<double> util_, peak_;
  int selected_ = -1;
  std::vector<char> flow_links_;  // per topology link: on a route of the selected node's flows
  bool any_flow_ = false;
  bool collapsed_ = false;
  double tier_gap_ = 0;
};

// The inside of one node (SimGrid's node model): CPU sockets, the PCIe switches under each, the
// GPUs and NICs under each switch, and a line from each GPU to the NIC its rank uses — grey under
// one switch, orange through the CPU root, red across the socket link (GPUDirect slows down).
class NodeScene : public QGraphicsScene {
  Q_OBJECT

 public:
  explicit NodeScene(QObject* parent = nullptr) : QGraphicsScene(parent) {}
  // Draws the node (a host of the topology); a node without a model gets a one-line note.
  void show(const TopoNode& node);
  // For tests: how the GPU-NIC pairs run (under one switch, through the root, across sockets).
  int pairsUnderSwitch() const { return under_switch_; }
  int pairsThroughRoot() const { return through_root_; }
  int pairsAcrossSockets() const { return across_sockets_; }

 private:
  int under_switch_ = 0, through_root_ = 0, across_sockets_ = 0;
};

// A view with wheel zoom, drag to pan, and tooltips from the scene's data.
class TopologyView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit TopologyView(TopologyScene* scene, QWidget* parent = nullptr);
  void fit();

 protected:
  void wheelEvent(QWheelEvent* event) override;
  bool viewportEvent(QEvent* event) override;

 private:
  TopologyScene* scene_;
};

}  // namespace rdmalab::gui
